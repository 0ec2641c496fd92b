"""The paper's analyses of a study's models: update footprints and task-vector geometry.

One module per analysis, all fed by one streaming pass over the weights (``weights.py``):
memory is bounded by a few tensor slices, never by the size or number of models.
"""
