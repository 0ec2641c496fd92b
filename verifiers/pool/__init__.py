"""Verifier worker pool: batches scored in separate interpreters with hard time limits."""
