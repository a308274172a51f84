"""The lowering stages of DESIGN.md as textual pipelines, and their names.

Each stage is a function of a frozen options dataclass that returns the
pipeline text taking IR from the previous stage to this one; the text is the
canonical form that lowerline-opt accepts, the tests use and reproducers
print. Each is also registered as a named pipeline usable as a pass name.

    linalg --graph--> graph --bufferized--> bufferized --loops--> loops --llvm--> llvm

The ``tiled`` stage (target-driven tile and fuse, vectorization) slots in
between ``graph`` and ``bufferized`` when it lands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lowerline.options import opt
from lowerline.pass_api import NamedPipeline, register_pipeline


@dataclass(frozen=True)
class CpuOptions:
    widen_i1: bool = opt(
        True,
        "run lowerline-widen-i1-memrefs before finalize-memref-to-llvm, which "
        "aborts on loads and stores of i1 memrefs",
    )


def graph(o: CpuOptions) -> str:
    """linalg on tensors -> graph: fuse elementwise chains, fold, dedupe.

    ``convert-elementwise-to-linalg`` first: arith/math ops on whole tensors
    (the ``i8 -> i1`` truncation of bool weights) become ``linalg.generic``s,
    which elementwise fusion can merge into their consumers.
    """
    return "func.func(convert-elementwise-to-linalg,linalg-fuse-elementwise-ops),canonicalize,cse"


def bufferized(o: CpuOptions) -> str:
    """tensors -> memrefs. Results become out-params so callers own all outputs."""
    return ",".join(
        [
            "one-shot-bufferize{bufferize-function-boundaries "
            "function-boundary-type-conversion=identity-layout-map}",
            # buffer-results-to-out-params crashes on an allocation returned twice.
            "func.func(lowerline-copy-repeated-results)",
            "buffer-results-to-out-params{hoist-static-allocs modify-public-functions}",
            "func.func(buffer-hoisting,buffer-loop-hoisting)",
            "buffer-deallocation-pipeline",
            "convert-bufferization-to-memref",
            "canonicalize",
            "cse",
        ]
    )


def loops(o: CpuOptions) -> str:
    """linalg on memrefs -> scf loops."""
    return "func.func(convert-linalg-to-loops),canonicalize,cse"


def llvm(o: CpuOptions) -> str:
    """loops -> LLVM dialect, with C wrappers so every function can be called."""
    passes = ["lowerline-widen-i1-memrefs"] if o.widen_i1 else []
    passes += [
        # bf16 truncations in integer ops: LLVM would call __truncdfbf2 or
        # __truncsfbf2 (libgcc before GCC 13 has neither), or use
        # vcvtneps2bf16, which flushes subnormals to zero.
        "lowerline-expand-bf16-truncf",
        # Before any pass creates functions: only the user's get a wrapper.
        "func.func(llvm-request-c-wrappers)",
        # fpowi / ipowi have no LLVM or libm lowering: outline software versions.
        "convert-math-to-funcs",
        "expand-strided-metadata",
        "lower-affine",
        "convert-scf-to-cf",
        # Math with an LLVM intrinsic first (sqrt, fabs, rsqrt as 1/sqrt, ...):
        # convert-math-to-libm would call `rsqrtf`, which libm does not have.
        # log1p is left to libm's log1pf; the LLVM pattern computes log(1 + x).
        "convert-math-to-llvm{approximate-log1p=false}",
        "convert-math-to-libm",
        "finalize-memref-to-llvm",
        "convert-to-llvm",
        "reconcile-unrealized-casts",
        # Fold the per-access constants and descriptor reads the lowering repeats.
        "canonicalize",
        "cse",
    ]
    return ",".join(passes)


# Stage name -> the pipeline that produces it from the previous stage.
CPU_STAGES: tuple[tuple[str, Callable[[CpuOptions], str]], ...] = (
    ("graph", graph),
    ("bufferized", bufferized),
    ("loops", loops),
    ("llvm", llvm),
)


def cpu(o: CpuOptions) -> str:
    """The whole CPU pipeline: linalg on tensors -> LLVM dialect."""
    return ",".join(build(o) for _, build in CPU_STAGES)


def module_pipeline(body: str) -> str:
    return f"builtin.module({body})"


_LLVM_OPTIONS = ("widen_i1",)
for _flag, _summary, _build, _uses in (
    ("lowerline-to-graph", "linalg on tensors -> graph (elementwise fusion, folding)", graph, ()),
    (
        "lowerline-to-bufferized",
        "graph -> bufferized (memrefs, results as out-params)",
        bufferized,
        (),
    ),
    ("lowerline-to-loops", "bufferized -> loops (scf)", loops, ()),
    ("lowerline-to-llvm", "loops -> LLVM dialect (C-callable wrappers)", llvm, _LLVM_OPTIONS),
    (
        "lowerline-cpu-pipeline",
        "linalg on tensors -> LLVM dialect: every CPU stage",
        cpu,
        _LLVM_OPTIONS,
    ),
):
    register_pipeline(NamedPipeline(_flag, _summary, CpuOptions, _build, _uses))
