"""The paper's analyses of a study's models: their weights, and their outputs on held-out sets.

Weight analyses (update footprints, task-vector geometry) share one streaming pass over the
weights (``weights.py``): memory is bounded by a few tensor slices, never by the size or number
of models. Output analyses (skill consistency, policy neighbourhood, KL from SFT,
self-verification) read the study's evaluations and, for KL and judging, generate.
"""
