"""``lowerline-opt``: an opt-style driver for upstream and lowerline passes."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable

from lowerline.processes import run_forked
from lowerline.tools.errors import run_guarded


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lowerline-opt",
        description="Run a pass pipeline mixing upstream MLIR passes and lowerline passes "
        "and pipelines on a .mlir file, like mlir-opt.",
    )
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file (default: stdin)")
    parser.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    parser.add_argument(
        "--pass-pipeline",
        dest="pipeline",
        metavar="PIPELINE",
        help='textual pipeline, e.g. "builtin.module(func.func(canonicalize))"',
    )
    parser.add_argument(
        "--list-passes",
        action="store_true",
        help="list lowerline's passes and named pipelines with their options",
    )
    parser.add_argument(
        "--split-input-file",
        action="store_true",
        help="process each '// -----' chunk of the input separately",
    )
    parser.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check diagnostics against expected-* annotations in the input",
    )
    parser.add_argument(
        "--mlir-print-ir-after-all",
        action="store_true",
        help="print the IR after every pass (to stderr)",
    )
    parser.add_argument(
        "--mlir-print-ir-after",
        action="append",
        default=[],
        metavar="PASS",
        help="print the IR after each run of PASS (repeatable)",
    )
    parser.add_argument(
        "--mlir-timing", action="store_true", help="report the wall time of every pass (to stderr)"
    )
    parser.add_argument(
        "--mlir-print-debuginfo", action="store_true", help="print locations in the output"
    )
    parser.add_argument(
        "--mlir-print-op-generic", action="store_true", help="print ops in the generic form"
    )
    parser.add_argument(
        "--allow-unregistered-dialect",
        action="store_true",
        help="accept ops of dialects that are not registered",
    )
    parser.add_argument(
        "--explore",
        metavar="REPORT.html",
        help="write the pass explorer's page: the IR after every pass with diffs, timings, "
        "op counts and remarks, in one HTML file",
    )
    return parser


def _main(argv: list[str], report: Callable[[str], None] | None = None) -> int:
    from lowerline.driver.opt_driver import OptConfig, OptRun, list_passes

    args = _parser().parse_args(argv)
    if args.list_passes:
        sys.stdout.write(list_passes())
        return 0
    config = OptConfig(
        input=args.input,
        output=args.output,
        pipeline=args.pipeline,
        split_input_file=args.split_input_file,
        verify_diagnostics=args.verify_diagnostics,
        print_ir_after_all=args.mlir_print_ir_after_all,
        print_ir_after=args.mlir_print_ir_after,
        timing=args.mlir_timing,
        debug_info=args.mlir_print_debuginfo,
        generic=args.mlir_print_op_generic,
        allow_unregistered=args.allow_unregistered_dialect,
        explore=args.explore,
    )
    return OptRun(config, report).run()


def main(argv: list[str] | None = None) -> int:
    """The ``lowerline-opt`` program (``argv`` None) runs the driver in a
    forked child (see ``opt_driver``'s docstring): an abort in a pass becomes
    exit status 1 and an error naming the pass. Called with ``argv`` from
    Python (tests), or with ``LOWERLINE_OPT_IN_PROCESS=1``, it runs here."""
    if argv is not None or os.environ.get("LOWERLINE_OPT_IN_PROCESS") == "1":
        return run_guarded("lowerline-opt", _main, sys.argv[1:] if argv is None else argv)
    args = sys.argv[1:]
    code, signum, last = run_forked(
        lambda report: run_guarded("lowerline-opt", lambda a: _main(a, report), args)
    )
    if signum is None:
        return code
    if signum == signal.SIGINT:
        return 130
    from lowerline.driver.opt_driver import crash_message

    sys.stderr.write(crash_message(signum, last))
    return 1


if __name__ == "__main__":
    sys.exit(main())
