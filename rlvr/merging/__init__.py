"""Merge presets: the paper's merge methods as mergekit configurations."""
