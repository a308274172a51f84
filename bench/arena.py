"""The arena of every zoo model (python/tests/zoo/test_zoo_models.py): its
size, the liveness lower bound, and what is still left to malloc per call
(buffers in parallel tiles, dynamic shapes). No timing: sizes and counts.

    .venv/bin/python bench/arena.py > bench/arena.md
"""

from __future__ import annotations

import sys
import tempfile

import torch

import lowerline

sys.path.insert(0, "python/tests/zoo")
from test_zoo_models import MODELS


def main() -> None:
    print("| model | arena KiB | lower bound KiB | ratio | left to malloc per call |")
    print("| --- | ---: | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory() as cache:
        for case in MODELS:
            torch.manual_seed(0)
            model, args = case.module(), case.inputs()
            compiled = lowerline.compile(model, *args, cache_dir=cache)
            compiled(*args)
            compiled(*args)  # steady state: the second call
            s = compiled.memory()
            ratio = s.arena_bytes / max(1, s.lower_bound_bytes)
            print(
                f"| {case.name} | {s.arena_bytes / 1024:.1f} | {s.lower_bound_bytes / 1024:.1f} "
                f"| {ratio:.3f} | {s.allocations} ({s.peak_bytes / 1024:.1f} KiB peak) |",
                flush=True,
            )


if __name__ == "__main__":
    main()
