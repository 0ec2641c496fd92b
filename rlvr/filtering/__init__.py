"""Difficulty filtering by pass rate: the band, per-row outcomes, the filter's files, its study stage."""
