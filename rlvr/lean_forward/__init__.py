"""GRPO's cheaper log-prob forward: length-sorted, padding-trimmed chunks, each distinct prompt encoded once."""
