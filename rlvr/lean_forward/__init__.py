"""GRPO's cheaper update: length-sorted, padding-trimmed chunks, each distinct prompt encoded once, zero-advantage rows left out."""
