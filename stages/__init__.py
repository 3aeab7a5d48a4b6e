"""rlclimb.stages"""
