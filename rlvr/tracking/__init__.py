"""Experiment tracking: W&B runs per stage, and reading them back."""
