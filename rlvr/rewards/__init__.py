"""Rewards for training and evaluation: the TRL reward bridge, batch scoring, the parallel-reasoning combiner, the local judge."""
