"""What the model sees: canonical rows from dataset adapters, prompt formats, micro-suite.

No torch, TRL, Hydra or W&B here.
"""

from tasks.schema import COLUMNS, DOMAINS, RowError, make_row, reference_of

__all__ = ["COLUMNS", "DOMAINS", "RowError", "make_row", "reference_of"]
