"""GRPO's cheaper update: length-sorted, trimmed chunks, prompts encoded once, no zero-advantage rows."""
