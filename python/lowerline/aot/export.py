"""``lowerline.export``: an nn.Module in, a C header and static library out.

    lowerline.export(model, x, target="cpu:cortex-a72", out_dir="out", name="mlp")
    # out/mlp.h, out/libmlp.a, out/README.md

The model is captured and compiled as ``lowerline.compile`` does (the same
workers and pipeline; single-threaded unless ``num_threads`` asks for
threads on x86, where the library calls the OpenMP runtime shipped beside
it), but the compile worker stops at the object files and checks that the
code runs without malloc and with a bounded stack (``driver.standalone``);
the header, the wrapper and the library are built here for the target with
its C compiler (``aot.toolchain``). Nothing is cached: an export always compiles.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from typing import Any

import torch

from lowerline.aot import cgen, signature, toolchain
from lowerline.api import _compile_artifact, _parse_options, _target_name
from lowerline.cpu.stages import CpuOptions
from lowerline.driver.memory import compile_memory as memory_bound
from lowerline.driver.workers import prestart_workers
from lowerline.errors import LowerlineError
from lowerline.frontend.export import export_program
from lowerline.targets import cpu_target, is_gpu_target


class ExportRefused(LowerlineError):
    """The compiled code would allocate on the heap, or on the stack by the
    tensors' size, at run time: the export writes nothing."""


@dataclass(frozen=True)
class ExportedModel:
    """What ``lowerline.export`` wrote, and its sizes."""

    name: str
    target: str
    out_dir: str
    header: str
    library: str
    readme: str
    workspace_bytes: int  # NAME_WORKSPACE_BYTES: the arena the plan allocates
    lower_bound_bytes: int  # the most planned bytes live at once
    sizes: toolchain.Sizes
    signature: signature.Signature
    openmp: str | None = None  # the OpenMP runtime copied beside the library (threads > 1)

    def _threads(self) -> str:
        threads = self.signature.num_threads
        return f", sized for {threads} threads; needs {self.openmp}" if self.openmp else ""

    def report(self) -> str:
        """The code-size and workspace report ``export`` prints."""
        ratio = self.workspace_bytes / self.lower_bound_bytes if self.lower_bound_bytes else 1.0
        return (
            f"{self.name} for {self.target}: {self.header}, {self.library}\n"
            f"workspace: {self.workspace_bytes} bytes (liveness lower bound "
            f"{self.lower_bound_bytes} bytes, {ratio:.2f}x){self._threads()}\n"
            + self.sizes.table(self.name)
        )


def _options(target: str, options: dict[str, Any]) -> CpuOptions:
    if is_gpu_target(target):
        raise ValueError(f"lowerline.export builds C libraries for CPUs; got target '{target}'")
    threads = options.setdefault("num_threads", 1)
    if type(threads) is not int or threads < 1:
        raise ValueError(f"num_threads must be a positive int for an export, got {threads!r}")
    parsed = _parse_options({**options, "target": _target_name(target)})
    assert isinstance(parsed, CpuOptions)  # a CPU target (checked above)
    if threads > 1:
        _check_threaded(target, parsed)
    return parsed


def _check_threaded(target: str, parsed: CpuOptions) -> None:
    """A multithreaded export links the OpenMP runtime the compiler uses
    (``toolchain.OPENMP``): only for x86 (the wheel's runtime is x86-64;
    there is none for AArch64 here), and only with ``parallel="openmp"``
    (the async runtime allocates its tasks on the heap)."""
    arch = cpu_target(parsed.target).arch
    if arch != "x86_64":
        raise ValueError(
            f"num_threads={parsed.num_threads}: target '{target}' ({arch}) exports are "
            "single-threaded (num_threads=1): multithreaded code needs an OpenMP runtime, "
            f"and there is none for {arch} here"
        )
    if parsed.parallel != "openmp":
        raise ValueError(
            f"num_threads={parsed.num_threads} with parallel={parsed.parallel!r}: multithreaded "
            "exports run their parallel tiles on OpenMP (parallel='openmp'); the async runtime "
            "allocates on the heap"
        )


def _refuse(problems: list[str]) -> ExportRefused:
    shown = "\n".join(f"  {problem}" for problem in problems[:20])
    more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
    return ExportRefused(
        "the compiled code would allocate memory the workspace does not hold, so it cannot be "
        f"exported without malloc:\n{shown}{more}"
    )


def _write(path: str, text: str) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def export(
    model: torch.nn.Module,
    *example_inputs: Any,
    target: str = "cpu",
    out_dir: str | None = None,
    name: str = "model",
    compile_memory: int | str | None = None,
    print_report: bool = True,
    **options: Any,
) -> ExportedModel:
    """Export ``model``, specialized to ``example_inputs``, as ``name.h``,
    ``libname.a`` and ``README.md`` in ``out_dir`` (default
    ``lowerline-export/<name>``) for ``target`` (``"cpu"``: this machine, or
    ``"cpu:NAME"`` of ``lowerline.targets.CPU_TARGETS``, e.g.
    ``"cpu:cortex-a72"``, built with that target's C compiler).

    ``name`` prefixes the C API (``name_run``, ``NAME_WORKSPACE_BYTES``).
    Compile options are ``lowerline.compile``'s; ``num_threads`` defaults to
    1, and more (x86 targets only) link the OpenMP runtime, copied into
    ``out_dir`` (``NAME_NUM_THREADS``; the workspace holds a scratch slot per
    thread). Prints the
    workspace and code-size report unless ``print_report=False``. Raises
    ``ExportRefused`` when the code would allocate outside the workspace,
    ``signature.ExportSignatureError`` for inputs or outputs C cannot take,
    ``toolchain.ToolchainError`` when the target's C compiler is missing, and
    what ``lowerline.compile`` raises.
    """
    signature.check_name(name)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
    parsed = _options(target, dict(options))
    # The toolchain, and the OpenMP runtime if threaded, before minutes of compiling.
    compiler = toolchain.c_compiler(cpu_target(parsed.target))
    openmp = toolchain.openmp_runtime(cpu_target(parsed.target)) if parsed.num_threads > 1 else None
    out_dir = os.path.abspath(out_dir or os.path.join("lowerline-export", name))
    os.makedirs(out_dir, exist_ok=True)
    memory = None if compile_memory is None else memory_bound(compile_memory)
    prestart_workers()
    program = export_program(model, example_inputs)
    workspace = tempfile.mkdtemp(prefix="lowerline-export-")
    try:
        failures = os.path.join(out_dir, "failures")
        meta = _compile_artifact(program, parsed, workspace, failures, memory, export=True)
        if meta["standalone_problems"]:
            raise _refuse(meta["standalone_problems"])
        exported = _build(
            name, target, parsed.num_threads, program, meta, workspace, out_dir, compiler
        )
        if openmp:
            exported = replace(exported, openmp=toolchain.ship_openmp(openmp, out_dir))
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if print_report:
        print(exported.report())
    return exported


def _build(
    name: str,
    target: str,
    threads: int,
    program,
    meta: dict,
    workspace: str,
    out_dir: str,
    compiler: str,
) -> ExportedModel:
    """Header, wrapper, library and README from the compiled objects."""
    api = signature.build(name, program, meta, threads)
    header = _write(os.path.join(out_dir, f"{name}.h"), cgen.header(api, target))
    target_cpu = cpu_target(_target_name(target))
    wrapper_text = cgen.wrapper(api, amx=target_cpu.amx)
    wrapper = _write(os.path.join(workspace, f"{name}_wrapper.c"), wrapper_text)
    shutil.copyfile(header, os.path.join(workspace, f"{name}.h"))
    library = os.path.join(out_dir, f"lib{name}.a")
    objects = toolchain.export_objects(workspace)
    combined = toolchain.build_library(
        compiler, target_cpu, workspace, name, wrapper, objects, library
    )
    sizes = toolchain.sizes(combined)
    readme = _write(os.path.join(out_dir, "README.md"), cgen.readme(api, target, sizes.table(name)))
    return ExportedModel(
        name=name,
        target=target,
        out_dir=out_dir,
        header=header,
        library=library,
        readme=readme,
        workspace_bytes=api.workspace_bytes,
        lower_bound_bytes=api.lower_bound_bytes,
        sizes=sizes,
        signature=api,
    )
