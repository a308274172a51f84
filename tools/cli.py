"""``lowerline``: the user-facing command line."""

from __future__ import annotations

import argparse
import sys

from lowerline.tools.errors import run_guarded

_DESCRIPTION = """\
lowerline lowers ML programs step by step through upstream MLIR dialects
(linalg -> graph -> bufferized -> loops -> llvm) and runs them on the CPU.

What works so far:
  lowerline run FILE.mlir     lower a function on tensors to LLVM, JIT it, call it
                              on seeded random inputs and print its results
  lowerline pipeline          print the textual pass pipeline of every CPU stage
  lowerline-opt               an mlir-opt style driver for upstream and lowerline
                              passes (see lowerline-opt --help, --list-passes)
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lowerline",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser("run", help="lower a .mlir function to LLVM, run it and print results")
    run.add_argument("file", help=".mlir file with a function on ranked, static tensors")
    run.add_argument("--entry", help="function to run (default: the only public one)")
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    run.add_argument("--dump-dir", help="write the IR after every stage to this folder")
    run.add_argument(
        "--no-widen-i1",
        action="store_true",
        help="skip lowerline-widen-i1-memrefs (for reproducing LLVM aborts)",
    )
    sub.add_parser("pipeline", help="print the pass pipeline of each CPU stage")
    return parser


def _print_array(label: str, array) -> None:
    import textwrap

    import numpy as np

    with np.printoptions(precision=4, suppress=True, threshold=64, edgeitems=3):
        print(f"{label}: {array.dtype.name}{list(array.shape)}")
        print(textwrap.indent(np.array2string(array), "  "))


def _run(args: argparse.Namespace) -> int:
    from lowerline.runner import run_file
    from lowerline.stages import CpuOptions

    result = run_file(
        args.file, args.entry, args.seed, args.dump_dir, CpuOptions(widen_i1=not args.no_widen_i1)
    )
    sig = result.signature
    stages = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in result.stage_seconds.items())
    print(f"@{sig.name}: lowered to LLVM and ran on the CPU ({stages})")
    for i, array in enumerate(result.inputs):
        _print_array(f"input #{i} (random, seed {args.seed})", array)
    for i, array in enumerate(result.outputs):
        _print_array(f"result #{i}", array)
    return 0


def _pipeline() -> int:
    from lowerline.stages import CPU_STAGES, CpuOptions, module_pipeline

    for stage, build in CPU_STAGES:
        print(f"{stage}: {module_pipeline(build(CpuOptions()))}")
    return 0


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "pipeline":
        return _pipeline()
    _parser().print_help()
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_guarded("lowerline", _main, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
