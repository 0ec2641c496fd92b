"""Evaluation building blocks: evaluate(), generation, scoring, backends and tool episodes.

``evaluator.evaluate`` runs every model on every benchmark; ``rlvr/evaluate.py`` is only its
command line. Training stages use the same pieces for the in-run held-out evaluation, and the
calibration, the analyses and the study plan call ``evaluate`` here, never the entry point.
"""
