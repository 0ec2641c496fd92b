"""Code verifier: extraction, the sandboxed harness, the judge and solution processes, their wire."""
