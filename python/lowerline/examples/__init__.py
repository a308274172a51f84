"""Bundled examples: `classifier.py` for `lowerline compile`, `mlp.mlir` for `lowerline run`."""
