"""Models and tokenizers: loading, the embedded tiny model, the packaged real model, the chat format."""
