"""LLM-judge verifier and its backends (local model, OpenAI-compatible HTTP)."""
