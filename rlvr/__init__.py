"""rlvr: multi-domain RLVR experiments — SFT, per-domain and mixed GRPO, merging, evaluation, report."""
