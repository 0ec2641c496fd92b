"""What the model sees: dataset adapters to the canonical row schema, prompt formats and
procedural generators for the embedded micro-suite. No torch, TRL, Hydra or W&B here."""

from tasks.schema import COLUMNS, DOMAINS, RowError, make_row, reference_of

__all__ = ["COLUMNS", "DOMAINS", "RowError", "make_row", "reference_of"]
