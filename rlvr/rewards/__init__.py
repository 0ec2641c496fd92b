"""Rewards for training and evaluation: the TRL reward bridge, batch scoring, scoring ahead during generation, the parallel-reasoning combiner, the local judge."""
