"""Run plumbing: run folders, the Hydra entry-point helpers, the run summary, compute accounting."""
