"""``lowerline``: the user-facing command line."""

from __future__ import annotations

import argparse
import sys

from lowerline.tools.errors import run_guarded

_DESCRIPTION = """\
lowerline lowers ML programs step by step through upstream MLIR dialects
(linalg -> graph -> bufferized -> loops -> llvm) and runs them on the CPU.

What works so far:
  lowerline compile FILE.py   compile the `model` a Python file defines for its
                              `example_inputs`, write every stage's IR and the
                              library, compare with eager PyTorch, print latencies
  lowerline run FILE.mlir     lower a function on tensors to LLVM, JIT it, call it
                              on seeded random inputs and print its results
  lowerline explore FILE.py -o REPORT.html
                              compile the model of a Python file and write one HTML
                              page: every pass's IR with diffs, timings, remarks,
                              the memory plan and the outputs against eager
  lowerline bisect FILE.py    find the first pass whose output differs from eager:
                              its stage, op, IR before and after, and the
                              lowerline-opt command that replays it
  lowerline pipeline          print the textual pass pipeline of every CPU stage
  lowerline export FILE.py    write a C header and static library (weights in it)
                              of the file's `model` for a --target CPU, e.g.
                              cpu:cortex-a72; prints workspace and code sizes
  lowerline object FILE.mlir  generate an object file (and --shared library) from
                              LLVM-dialect IR for a --target CPU, as the compile
                              worker does
  lowerline cache clear       empty the compile cache
  lowerline-opt               an mlir-opt style driver for upstream and lowerline
                              passes (see lowerline-opt --help, --list-passes)
"""


_EXPORT_TARGET_HELP = (
    "'cpu' (default: this machine) or 'cpu:NAME' (e.g. cpu:cortex-a72, built with "
    "aarch64-linux-gnu-gcc)"
)


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
    comp = sub.add_parser(
        "compile", help="compile a model file, compare with eager and report latencies"
    )
    comp.add_argument("file", help="a .py file defining `model` and `example_inputs`")
    comp.add_argument(
        "-o", "--out", help="folder for stage IR and artifacts (default: lowerline-out/<file name>)"
    )
    comp.add_argument("--runs", type=int, default=50, help="timed runs for each latency")
    comp.add_argument("--no-cache", action="store_true", help="compile without the cache")
    comp.add_argument(
        "--target",
        default="cpu",
        help="'cpu' (default), 'cpu:NAME', or 'cuda:sm_80' / 'cuda:sm_90': PTX, cubin and "
        "fatbin are built and checked with ptxas, the GPU-mapped IR runs on this CPU",
    )
    export = sub.add_parser(
        "export", help="a model file to a C header and static library (lowerline.export)"
    )
    export.add_argument("file", help="a .py file defining `model` and `example_inputs`")
    export.add_argument("--target", default="cpu", help=_EXPORT_TARGET_HELP)
    export.add_argument(
        "--num-threads",
        type=int,
        default=1,
        help="threads a call uses (default 1); more, on x86 only, link the OpenMP runtime "
        "(libiomp5.so), copied beside the library",
    )
    export.add_argument(
        "-o",
        "--out",
        help="folder for NAME.h, libNAME.a, README.md (default: lowerline-export/NAME)",
    )
    export.add_argument("--name", help="the C API's prefix (default: the file's name)")
    export.add_argument("--quiet", action="store_true", help="no progress line on the terminal")
    comp.add_argument("--quiet", action="store_true", help="no progress line on the terminal")
    _add_explore_parser(sub)
    _add_bisect_parser(sub)
    obj = sub.add_parser("object", help="LLVM-dialect .mlir to an object file for a CPU target")
    obj.add_argument("file", help="a module in the LLVM dialect (e.g. a dumped llvm stage)")
    obj.add_argument("-o", dest="output", required=True, help="the object file to write")
    obj.add_argument("--shared", help="also link this shared library from it")
    obj.add_argument(
        "--target",
        default="host",
        help="CPU to generate code for: 'host' (default, this machine) or a name of "
        "lowerline.targets.CPU_TARGETS (e.g. sapphirerapids, haswell, cortex-a72)",
    )
    cache = sub.add_parser("cache", help="manage the compile cache")
    cache.add_argument("action", choices=["clear", "path"], help="clear it, or print its folder")
    cache.add_argument(
        "--cache-dir", help="the cache folder (default: $LOWERLINE_CACHE_DIR or ~/.cache/lowerline)"
    )
    return parser


def _model_command(sub, name: str, summary: str, output: str) -> argparse.ArgumentParser:
    """A subcommand on a model file: the file, ``-o``, ``--target``, ``--quiet``."""
    command = sub.add_parser(name, help=summary)
    command.add_argument("file", help="a .py file defining `model` and `example_inputs`")
    command.add_argument("-o", dest="output", help=output)
    command.add_argument("--target", default="cpu", help="'cpu' (default) or 'cpu:NAME'")
    command.add_argument("--quiet", action="store_true", help="no progress line on the terminal")
    return command


def _add_explore_parser(sub) -> None:
    explore = _model_command(
        sub,
        "explore",
        "compile a model file and write the pass explorer's HTML page",
        "the page to write (default: <file name>-explore.html)",
    )
    explore.add_argument("--no-cache", action="store_true", help="compile without the cache")
    explore.add_argument(
        "--bisect",
        metavar="FOLDER",
        help="also find the first pass whose output differs from eager (lowerline bisect), "
        "mark it on the page and write its IR before and after to FOLDER",
    )


def _explore(args: argparse.Namespace) -> int:
    import os

    from lowerline.driver import progress
    from lowerline.explore.model import explore_file

    stem = os.path.splitext(os.path.basename(args.file))[0]
    output = args.output or f"{stem}-explore.html"
    with progress.shown(quiet=args.quiet):
        explore_file(args.file, output, args.target, not args.no_cache, args.bisect)
    print(f"wrote {output}: open it in a browser (one file, no network)")
    return 0


def _add_bisect_parser(sub) -> None:
    _model_command(
        sub,
        "bisect",
        "find the first pass whose output differs from eager beyond the tolerance",
        "folder for the IR before and after it (default: <file name>-bisect)",
    )


def _bisect(args: argparse.Namespace) -> int:
    """Exit status 1 when a pass diverges, 0 when every pass is right."""
    import os

    from lowerline.driver import progress
    from lowerline.explore.model import bisect_file

    stem = os.path.splitext(os.path.basename(args.file))[0]
    with progress.shown(quiet=args.quiet):
        found = bisect_file(args.file, args.output or f"{stem}-bisect", args.target)
    if found is None:
        print(f"{args.file}: every pass's output is within the tolerance of eager")
        return 0
    print(f"first divergent pass: {found['label']} (stage {found['stage']})")
    print(f"  op: {found['op']}")
    print(f"  {found['mismatch']}")
    print(f"  IR before: {found['before']}")
    print(f"  IR after:  {found['after']}")
    print(f"  reproduce: {found['command']}")
    return 1


def _print_array(label: str, array) -> None:
    import textwrap

    import numpy as np

    with np.printoptions(precision=4, suppress=True, threshold=64, edgeitems=3):
        print(f"{label}: {array.dtype.name}{list(array.shape)}")
        print(textwrap.indent(np.array2string(array), "  "))


def _run(args: argparse.Namespace) -> int:
    from lowerline.cpu.stages import CpuOptions
    from lowerline.driver.runner import run_file

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
    from lowerline.cpu.stages import CPU_STAGES, CpuOptions, module_pipeline

    for stage, build in CPU_STAGES:
        print(f"{stage}: {module_pipeline(build(CpuOptions()))}")
    return 0


def _compile(args: argparse.Namespace) -> int:
    import os

    from lowerline.driver import progress
    from lowerline.driver.compile_cli import compile_file

    stem = os.path.splitext(os.path.basename(args.file))[0]
    out_dir = args.out or os.path.join("lowerline-out", stem)
    if args.target.startswith("cuda:"):
        with progress.shown(quiet=args.quiet):
            return _compile_gpu(args, out_dir)
    with progress.shown(quiet=args.quiet):
        report = compile_file(
            args.file, out_dir, runs=args.runs, cache=not args.no_cache, target=args.target
        )
    origin = "from the cache" if report.cache_hit else "compiled"
    print(f"{args.file}: {origin}; stage IR and lib.so in {report.out_dir}/")
    for stage, seconds in report.stage_seconds.items():
        print(f"  {stage:<11} {seconds * 1000:9.1f} ms")
    ratio = report.compiled_seconds / report.eager_seconds
    print(
        f"latency (median of {args.runs}): eager {report.eager_seconds * 1e3:.3f} ms, "
        f"lowerline {report.compiled_seconds * 1e3:.3f} ms ({ratio:.2f}x eager)"
    )
    print(f"peak intermediate memory: {report.memory}")
    print(f"arena: {report.memory.arena()}")
    _print_fallbacks(report.fallbacks)
    if report.quant_report is not None:
        print(report.quant_report)
        print(f"largest difference from the float model on the example: {report.max_abs_diff:.3g}")
        _fail_quant_report(report.quant_report)
        return 0
    print(f"tolerance: {report.tolerance}")
    print(f"largest difference from eager: {report.max_abs_diff:.3g}")
    _fail_outside_tolerance(report.mismatch)
    return 0


def _fail_quant_report(report) -> None:
    if not report.ok:
        from lowerline.errors import LowerlineError

        worst = max(report.layers, key=lambda layer: layer.max_steps)
        raise LowerlineError(
            f"int8 layer {worst.name} is {worst.max_steps:.2f} output steps from its QDQ "
            "reference (at most 1 is one rounding step)"
        )


def _fail_outside_tolerance(mismatch) -> None:
    if mismatch is not None:
        from lowerline.errors import LowerlineError

        raise LowerlineError(f"outside the tolerance: {mismatch.describe()}")


def _print_fallbacks(fallbacks: list) -> None:
    """The ops left as plain loops (``CompiledModule.fallbacks``), one a line."""
    if not fallbacks:
        print("ops left as plain loops: none (everything tiled and vectorized)")
        return
    print(f"ops left as plain loops (not tiled or not vectorized): {len(fallbacks)}")
    for f in fallbacks:
        # The model's line, then the torch function it called (a module's forward).
        where = f.source_line or "an unknown location"
        if f.location != f.source_line:
            where += f" ({f.location})"
        print(f"  {f.op} at {where}: {f.message} [{f.pass_flag}]")


def _compile_gpu(args: argparse.Namespace, out_dir: str) -> int:
    from lowerline.driver.compile_cli import compile_file_gpu

    report = compile_file_gpu(args.file, out_dir, args.target, cache=not args.no_cache)
    origin = "from the cache" if report.cache_hit else "compiled"
    print(f"{args.file}: {origin} for {args.target}; IR, PTX, cubins, fatbins in {out_dir}/")
    for stage, seconds in report.stage_seconds.items():
        print(f"  {stage:<13} {seconds * 1000:9.1f} ms")
    arch = args.target.split(":", 1)[1]
    print(f"{len(report.kernels)} kernel launches (ptxas -v for {arch}):")
    for k in report.kernels:
        r = k["resources"].get(arch, {})
        spills = r.get("spill_store_bytes", 0) + r.get("spill_load_bytes", 0)
        print(
            f"  {k['name']:<28} grid {k['grid']} block {k['block']} "
            f"shared {k['shared_bytes']} B, {r.get('registers', '?')} registers, "
            f"{spills} B spilled"
        )
    print(
        f"GPU-mapped IR run on this CPU: largest difference from eager "
        f"{report.emulation_max_abs_diff:.3g}"
    )
    if report.device:
        print(f"not run on a GPU: {report.device}")
    else:
        print(f"on the GPU: largest difference from eager {report.device_max_abs_diff:.3g}")
    _print_fallbacks(report.fallbacks)
    where = "the CPU run of the mapped IR" if report.device else "the GPU and CPU runs"
    print(f"tolerance (checked on {where}): {report.tolerance}")
    _fail_outside_tolerance(report.mismatch)
    return 0


def _object(args: argparse.Namespace) -> int:
    from lowerline.driver.objects import emit_object, link_shared_library
    from lowerline.driver.runner import read_source
    from lowerline.errors import UsageError
    from lowerline.pipeline.lowerer import Lowerer
    from lowerline.targets import cpu_target

    try:
        target = cpu_target(args.target)
    except ValueError as err:
        raise UsageError(str(err)) from None
    lowerer = Lowerer()
    module = lowerer.parse(read_source(args.file), source_name=args.file)
    emit_object(module, args.output, target)
    if args.shared:
        link_shared_library(args.output, args.shared, target)
    print(f"wrote {args.output}" + (f" and {args.shared}" if args.shared else ""))
    return 0


def _export(args: argparse.Namespace) -> int:
    import os
    import re

    from lowerline.aot.export import export
    from lowerline.driver import progress
    from lowerline.driver.compile_cli import load_model_file
    from lowerline.errors import UsageError

    stem = os.path.splitext(os.path.basename(args.file))[0]
    name = args.name or re.sub(r"\W", "_", stem)
    model, inputs = load_model_file(args.file)
    try:
        with progress.shown(quiet=args.quiet):
            export(
                model,
                *inputs,
                target=args.target,
                out_dir=args.out,
                name=name,
                num_threads=args.num_threads,
            )
    except (ValueError, TypeError) as err:  # a bad --name, --target or --num-threads
        raise UsageError(str(err)) from None
    return 0


def _cache(args: argparse.Namespace) -> int:
    from lowerline.driver.cache import Cache

    cache = Cache.at(args.cache_dir)
    if args.action == "path":
        print(cache.root)
        return 0
    cleared = cache.clear()  # CacheError (nothing removed) for a folder that is not a cache
    for path in cleared.entries + cleared.reproducers + cleared.workspaces:
        print(f"removed {path}")
    print(cleared.summary())
    return 0


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "pipeline":
        return _pipeline()
    if args.command == "compile":
        return _compile(args)
    if args.command == "explore":
        return _explore(args)
    if args.command == "bisect":
        return _bisect(args)
    if args.command == "cache":
        return _cache(args)
    if args.command == "object":
        return _object(args)
    if args.command == "export":
        return _export(args)
    _parser().print_help()
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_guarded("lowerline", _main, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
