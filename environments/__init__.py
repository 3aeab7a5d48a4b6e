"""rlclimb.environments"""
