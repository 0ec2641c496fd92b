"""The report's building blocks: tables from evaluation summaries, seed statistics, figures."""
