"""Rewards: the TRL reward bridge, batch scoring, scoring ahead, the parallel-reasoning combiner, the judge."""
