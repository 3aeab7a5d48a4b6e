"""rlclimb.rl"""
