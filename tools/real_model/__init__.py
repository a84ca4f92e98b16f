"""Train the tiny real acoustic model behind examples/data/real (docs/real-speech.md)."""
