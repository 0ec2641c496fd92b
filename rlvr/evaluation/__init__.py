"""Evaluation building blocks: generation, held-out scoring, backends and tool episodes.

``rlvr/evaluate.py`` is the entry point that composes them; training stages use them for the
in-run held-out evaluation.
"""
