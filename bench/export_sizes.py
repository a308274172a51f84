"""Sizes of exported models (``lowerline.export``): workspace against the
liveness lower bound, and the library's text, weights, read-only data, data
and bss, for this machine and for ``cpu:cortex-a72``.

    .venv/bin/python bench/export_sizes.py [--targets cpu,cpu:cortex-a72]

Writes ``bench/export.md``. Sizes only, no timings: nothing here depends on
the machine's load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import torch

import lowerline

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))
sys.path.insert(0, str(ROOT / "python" / "tests" / "zoo"))
from test_export_aarch64 import CASES  # noqa: E402  (the models the qemu tests run)


def _classifier() -> tuple[torch.nn.Module, tuple]:
    import runpy

    example = runpy.run_path(str(ROOT / "python" / "lowerline" / "examples" / "classifier.py"))
    return example["model"], example["example_inputs"]


def models() -> dict[str, tuple[torch.nn.Module, tuple]]:
    found = {}
    for case in CASES:
        torch.manual_seed(0)
        found[case.name] = (case.module().eval(), case.inputs())
    found["classifier"] = _classifier()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="cpu,cpu:cortex-a72")
    args = parser.parse_args()
    rows = []
    for target in args.targets.split(","):
        for name, (model, inputs) in models().items():
            with tempfile.TemporaryDirectory() as out:
                exported = lowerline.export(
                    model, *inputs, target=target, out_dir=out, name=name, print_report=False
                )
            s = exported.sizes
            ratio = exported.workspace_bytes / max(exported.lower_bound_bytes, 1)
            rows.append(
                f"| {name} | {target} | {exported.workspace_bytes} | "
                f"{exported.lower_bound_bytes} | {ratio:.2f} | {s.text} | {s.weights} | "
                f"{s.rodata} | {s.data} | {s.bss} |"
            )
            print(rows[-1], flush=True)
    table = [
        "| model | target | workspace (B) | lower bound (B) | ratio | text | weights | "
        "rodata | data | bss |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
    ]
    from lowerline.targets import host_cpu

    host = f"`cpu` is this machine: LLVM CPU {host_cpu().cpu} ({host_cpu().triple}).\n\n"
    with open(ROOT / "bench" / "export.md", "w", encoding="utf-8") as handle:
        handle.write(HEADER + host + "\n".join(table) + "\n")
    return 0


HEADER = f"""# Exported model sizes

`{os.path.join("bench", "export_sizes.py")}` (``lowerline.export``, single-threaded):
the workspace a call needs (`NAME_WORKSPACE_BYTES`, the static memory plan's
arena) against the liveness lower bound (the most planned bytes live at one
point), and the static library's sections in bytes: machine code (text), the
model's weights (`.rodata.lowerline_weights`), other read-only data (constant
tables), data and bss. The weights are the model's parameters as they are
(f32) plus what the compiler packed or folded from them.

"""


if __name__ == "__main__":
    sys.exit(main())
