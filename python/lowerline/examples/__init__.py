"""Bundled examples: `classifier.py` for `lowerline compile`, `mlp.mlir` for `lowerline run`."""

import os

EXAMPLES_DIR = os.path.dirname(os.path.abspath(__file__))
