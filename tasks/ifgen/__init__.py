"""Generated instruction-following training data: natural requests with verifiable constraints."""
