"""The lowering stages of DESIGN.md as textual pipelines, and their names.

Each stage is a function of a frozen options dataclass that returns the
pipeline text taking IR from the previous stage to this one; the text is the
canonical form that lowerline-opt accepts, the tests use and reproducers
print. Each is also registered as a named pipeline usable as a pass name.

    linalg --graph--> graph --tiled--> tiled --bufferized--> bufferized
           --loops--> loops --llvm--> llvm
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lowerline.pipeline.options import one_of, opt
from lowerline.pipeline.pass_api import NamedPipeline
from lowerline.targets import check_cpu_target, cpu_target


@dataclass(frozen=True)
class CpuOptions:
    target: str = opt(
        "host",
        "CPU the code is for: 'host' (this machine, detected) or a name of "
        "lowerline.targets.CPU_TARGETS; tile sizes, vector widths and the "
        "object's triple and CPU come from it",
        check=check_cpu_target,
    )
    tile: bool = opt(
        True,
        "run the tiled stage (tile and fuse, vectorize); without it every op becomes naive loops",
    )
    num_threads: int = opt(0, "threads the code may use; 0: the target's cores")
    parallel: str = opt(
        "openmp",
        "runtime for the parallel tiles: 'openmp' (Intel's OpenMP runtime) or "
        "'async' (MLIR's async runtime); bench/threads.md compares them",
        check=one_of("openmp", "async"),
    )
    buffer_reuse: bool = opt(
        True,
        "bufferized stage: a buffer per value (lowerline-split-empty-tensors), freed "
        "right after its last use (optimize-allocation-liveness) so that later ones reuse "
        "its memory; False: shared empty tensors, everything freed at the end",
    )
    arena: bool = opt(
        True,
        "bufferized stage: the entry function's statically shaped buffers, and the "
        "scratch of parallel tiles in a slot per thread, as views of one arena argument "
        "(lowerline-plan-arena), which the caller keeps and reuses across calls; False: "
        "each buffer is allocated and freed at every call",
    )
    winograd: bool = opt(
        True,
        "tiled stage: 3x3 stride-1 convolutions with enough channels as Winograd "
        "F(4x4, 3x3) (lowerline-winograd-conv; 4x fewer multiplies, rounding differs "
        "by ~1e-6 relative); False: direct convolution kernels",
    )
    conv_channel_vectors: bool = opt(
        True,
        "tiled stage: f32 convolutions whose output rows are strided or not whole vectors, "
        "with output channels a multiple of the lanes, as outer products along the output "
        "channels (lowerline-vectorize-conv-channels); False: the direct row kernels",
    )
    split_strided_columns: bool = opt(
        True,
        "tiled stage: a convolution strided along the row as one row-strided convolution "
        "per column phase over a contiguous copy of that phase's input columns "
        "(lowerline-split-strided-columns); False: strided row reads and a permute per vector",
    )
    time_kernels: bool = opt(
        False,
        "loops stage: bracket each top-level kernel with calls to a timer "
        "(lowerline-time-kernels), for the explorer's roofline; normal compiles leave it off",
    )
    approximate_math: bool = opt(
        True,
        "llvm stage: f32 exp, tanh, erf, log, sin, cos, atan, pow... as vector "
        "polynomials (lowerline-approximate-exp, -math); off: libm calls per "
        "lane (bisection's reference path)",
    )
    widen_i1: bool = opt(
        True,
        "run lowerline-widen-i1-memrefs before finalize-memref-to-llvm, which "
        "aborts on loads and stores of i1 memrefs",
    )


def graph(o: CpuOptions, vector_rows: bool = True) -> str:
    """linalg on tensors -> graph: fuse elementwise chains, fold, dedupe.

    ``convert-elementwise-to-linalg`` first: arith/math ops on whole tensors
    (the ``i8 -> i1`` truncation of bool weights) become ``linalg.generic``s,
    which elementwise fusion can merge into their consumers. Results nothing
    reads are dropped before (``lowerline-drop-dead-results``: the unused
    index of softmax's row maximum, which keeps it from vectorizing).
    torch-mlir's TMTensor ops (sort, scatter, scan) become scf loops first
    (``lowerline-lower-tm-tensor``): nothing after it knows them; with
    ``vector_rows``, scatters of whole rows (index_add, embedding bags)
    combine rows with the target's vectors, wide rows split among the
    threads by columns, and scans and sorts are vectorized and threaded
    where they allow it (the GPU path keeps scalar loops, but for scans as
    log-step elementwise ops, which it maps to kernels). Last, the sizes
    of dynamic dims are clamped to their declared ranges
    (``lowerline-bound-dynamic-dims``) so that ``int-range-optimizations``
    folds torch-mlir's size checks (a broadcast of a possible size 1 would
    read through a gather); the broadcasts left copying their source
    unchanged are dropped (``lowerline-fold-identity-extracts``), and the
    views whose shape is built at run time from those sizes become expand /
    collapse shapes, which the arena plans (``lowerline-expand-dynamic-reshapes``). Quantized
    linear layers, convolutions and batch matmuls (dequantize -> matmul/conv
    -> quantize) become integer kernels before anything fuses their
    dequantizes away (``lowerline-fold-qdq-matmul``, ``-conv``,
    ``-batch-matmul``), after the
    layout ops between quantized layers (reshapes, transposes, pads, max
    pooling, concat) moved onto the integers
    (``lowerline-sink-qdq-through-layout-ops``). After fusion, a row max of
    dequantized bytes (an int8 softmax) runs on the bytes
    (``lowerline-sink-dequantize-through-max``), and the u8 -> s8 shifts
    behind layout ops move into the ops producing the bytes
    (``lowerline-hoist-sign-flips``). A transposed convolution
    (a stride-1 conv over the input spread out with zeros) becomes one
    sub-convolution per output phase (``lowerline-decompose-transposed-conv``).
    A batch matmul by a weight broadcast over the batch becomes one matmul
    over all rows (``lowerline-collapse-broadcast-batch-matmul``), its bias
    epilogue collapsed with it: first before the QDQ folds (a quantized
    linear of a strided 3-D input, nn.MultiheadAttention's in-projection,
    reaches linalg in that form, which lowerline-fold-qdq-matmul does not
    take), then again after fusion. With ``vector_rows`` (CPU), a
    gather's row index is read in its body, so its rows vectorize as
    contiguous reads (``lowerline-read-gather-indices``), and a 1x1
    stride-1 convolution with its elementwise epilogue works on each plane
    as one row, tiled into whole vectors (``lowerline-pointwise-conv-rows``),
    and a returned elementwise op over rows of an odd length runs over rows
    of whole vector tiles of the same buffers (``lowerline-align-elementwise-rows``).
    An index check's read of ``arange`` at the index is the index itself,
    with no table written (``lowerline-fold-iota-extracts``). An elementwise
    op reading a 2-D result (a linear layer's) through a reshape to (batch,
    sequence, n) runs over the 2-D rows, so it fuses into the matmul's
    epilogue (``lowerline-collapse-expanded-elementwise``). With
    ``vector_rows`` (CPU), a bf16/f16 matmul reads its narrow operands, not
    f32 copies, and accumulates in f32
    (``lowerline-fold-extf-into-contractions``; the GPU mapping keeps f32
    contractions).
    """
    rows = f"{{vector-bits={cpu_target(o.target).vector_bits} threads={threads(o)}}}"
    bits = cpu_target(o.target).vector_bits
    gathers = ",lowerline-read-gather-indices,lowerline-pointwise-conv-rows" if vector_rows else ""
    # A returned elementwise op over rows of an odd length: over rows of whole vectors.
    if vector_rows:
        gathers += f",lowerline-align-elementwise-rows{{vector-bits={bits}}}"
    # Before fusion merges the extensions into other elementwise ops.
    narrow = "lowerline-fold-extf-into-contractions," if vector_rows else ""
    return (
        f"lowerline-lower-tm-tensor{rows if vector_rows else '{log-step-scans}'},"
        # A quantized linear of a strided input folds only once collapsed.
        "func.func(lowerline-collapse-broadcast-batch-matmul,"
        "lowerline-sink-qdq-through-layout-ops,"
        "lowerline-fold-qdq-matmul,lowerline-fold-qdq-conv,lowerline-fold-qdq-batch-matmul,"
        "lowerline-decompose-transposed-conv,"
        f"convert-elementwise-to-linalg,{narrow}lowerline-fold-iota-extracts,"
        "lowerline-drop-dead-results,lowerline-fuse-elementwise,"
        # A row max of dequantized int8 (softmax) on the integers; the
        # dequantize it leaves with one user fuses into that one.
        "lowerline-sink-dequantize-through-max,lowerline-fuse-elementwise,"
        # The u8 -> s8 shifts fusion could not reach (behind layout ops).
        "lowerline-hoist-sign-flips,"
        # After fusion: the check's compare is in its reduction's body.
        "lowerline-fold-all-inf-checks,"
        # 1 - erf(x) (the frontend's erfc) as math.erfc: no cancellation.
        "lowerline-fold-erfc,"
        # After fusion: a chain fused over (b, m, n) collapses as one op.
        "lowerline-collapse-expanded-elementwise,"
        f"lowerline-collapse-broadcast-batch-matmul{gathers}),canonicalize,cse,"
        # Last: the rest of the graph stage sees the IR torch-mlir gave
        # (the QDQ folds match its forms); a no-op without dynamic dims.
        "func.func(lowerline-bound-dynamic-dims,int-range-optimizations,canonicalize,"
        # A view over a dynamic size as expand/collapse: the arena plans it.
        "lowerline-fold-identity-extracts,lowerline-expand-dynamic-reshapes,canonicalize)"
    )


def tiled(o: CpuOptions) -> str:
    """graph -> tiled: weights in the layout the kernels read, int8
    convolutions as matmuls of channels-last columns by the packed filter on a
    target with an int8 dot product (lowerline-int8-conv-matmul, before the
    pads it reads through are decomposed), padding as fills and in-place
    writes, convolutions strided along the row as one row-strided convolution
    per column phase (``split_strided_columns``), 3x3 convolutions as
    Winograd transforms + batch matmuls (``winograd``), then target-driven
    tile and fuse with vectorization (lowerline-tile-and-fuse)."""
    if not o.tile:
        return "func.func(lowerline-fold-constant-transposes)"
    winograd = f",lowerline-winograd-conv{{target={o.target}}}" if o.winograd else ""
    split = "lowerline-split-strided-columns," if o.split_strided_columns else ""
    channels = ""
    if o.conv_channel_vectors:
        keep = "true" if o.winograd else "false"
        channels = f"lowerline-vectorize-conv-channels{{target={o.target} keep-winograd={keep}}},"
    return (
        "func.func(lowerline-fold-constant-transposes,"
        f"lowerline-int8-conv-matmul{{target={o.target}}},"
        f"{channels}{split}lowerline-decompose-pad{winograd},"
        f"lowerline-amx-matmul{{target={o.target}}}),"
        f"lowerline-tile-and-fuse{{target={o.target}}},"
        f"func.func(lowerline-pack-weights),lowerline-vectorize{{target={o.target}}},canonicalize,cse,"
        # After CSE (equal loop bounds are one value); CSE again computes the
        # fused loops' shared reads and values once.
        "lowerline-fuse-row-sweeps,cse,"
        # A dynamic row's masked last chunk updates its partial results in
        # a register, not through a scratch buffer.
        "lowerline-carry-masked-accumulators"
    )


def bufferized(o: CpuOptions, vector_rows: bool = True) -> str:
    """tensors -> memrefs. Results become out-params so callers own all outputs;
    a result that is a reshape of a buffer computed here is allocated in its
    returned shape first (lowerline-allocate-reshaped-results), so that the
    code writes the out-param in place instead of copying into it.

    With ``buffer_reuse``, values get allocations as short-lived as they are:
    unrelated uses of one ``tensor.empty`` (CSE merges them) get their own
    (lowerline-split-empty-tensors; one shared buffer would stay alive from
    the first use to the last), and each buffer is freed right after its last
    use (optimize-allocation-liveness; the deallocation pipeline frees at the
    end of the function), so that later allocations reuse the memory. The
    measured peak of an encoder layer drops to about a quarter (README "Memory").
    With ``arena``, those buffers then get fixed offsets in one arena argument
    (lowerline-plan-arena), and the scratch of each parallel tile a slot per
    thread there (``arena_threads``): a call allocates nothing but buffers
    nested in sequential loops or nested parallel tiles and dynamically
    shaped ones.
    """
    split = ["func.func(lowerline-split-empty-tensors)"] if o.buffer_reuse else []
    early_free = ["func.func(optimize-allocation-liveness)"] if o.buffer_reuse else []
    return ",".join(
        [
            *split,
            "one-shot-bufferize{bufferize-function-boundaries "
            "function-boundary-type-conversion=identity-layout-map}",
            # A returned reshape of an allocation: allocated in the returned
            # shape, so that the out-param replaces it instead of a copy.
            "func.func(lowerline-allocate-reshaped-results)",
            # buffer-results-to-out-params crashes on an allocation returned twice.
            "func.func(lowerline-copy-repeated-results)",
            # Results of dynamic size too: the runtime sizes the out-params
            # from the inputs' (lowerline.runtime.sizes), so the code writes
            # into them instead of an arena buffer copied out at every call.
            "buffer-results-to-out-params{hoist-static-allocs hoist-dynamic-allocs "
            "modify-public-functions}",
            "func.func(buffer-hoisting,buffer-loop-hoisting)",
            "buffer-deallocation-pipeline",
            "convert-bufferization-to-memref",
            # Strided copies as loops of vector rows (the GPU path maps
            # linalg.copy to threads instead).
            "func.func(lowerline-strided-copies-to-linalg)"
            if vector_rows
            else "func.func(lowerline-strided-copies-to-linalg{vector-rows=0})",
            *early_free,
            *([f"lowerline-plan-arena{{threads={arena_threads(o)}}}"] if o.arena else []),
            "canonicalize",
            "cse",
        ]
    )


def threads(o: CpuOptions) -> int:
    """The thread count the code is built for: the option, else the target's cores."""
    return o.num_threads or cpu_target(o.target).cores


def arena_threads(o: CpuOptions) -> int:
    """Per-thread scratch slots lowerline-plan-arena reserves for each parallel
    loop: the loops stage's thread count, which bounds every OpenMP team
    (``convert-scf-to-openmp{num-threads}``), or 1 where the loops run
    sequentially; 0 (scratch allocated per tile) for the async runtime, whose
    workers have no thread number the code can read."""
    n = threads(o)
    return n if n == 1 or o.parallel == "openmp" else 0


def loops(o: CpuOptions) -> str:
    """linalg on memrefs -> scf loops; vector transfers of rank > 1 unrolled.

    The parallel tiles (``scf.forall``) run on OpenMP threads (Intel's
    runtime, pip-installed; bench/threads.md has the measurements behind
    the choice), or as plain loops for one thread.
    """
    n = threads(o)
    if n == 1:
        parallel = "func.func(scf-forall-to-for)"
    elif o.parallel == "async":
        parallel = (
            f"func.func(scf-forall-to-parallel),async-parallel-for{{num-workers={n}}},"
            "async-to-async-runtime,async-runtime-ref-counting,async-runtime-ref-counting-opt"
        )
    else:
        parallel = (
            f"func.func(scf-forall-to-parallel),convert-scf-to-openmp{{num-threads={n}}},"
            # Before canonicalize: the thread number of the scratch slots
            # (lowerline-plan-arena) out of the loop bodies' alloca scopes.
            "lowerline-dynamic-omp-schedule,lowerline-omp-loop-nowait,"
            "func.func(lowerline-hoist-thread-number)"
        )
    # Before the parallel loops become OpenMP regions: a region is timed whole.
    timers = "lowerline-time-kernels," if o.time_kernels else ""
    return (
        # AMX contractions (lowerline-amx-matmul) as tile loops first:
        # their blocks may be parallel loops too.
        f"lowerline-amx-tiles,{timers}{parallel},"
        "func.func(convert-linalg-to-loops,convert-vector-to-scf{full-unroll target-rank=1}),"
        "canonicalize,cse"
    )


# bf16 arithmetic (scalar and vector) in f32, each result truncated back to
# bf16 by an arith.truncf that lowerline-expand-bf16-truncf then expands.
# Left to LLVM, every bf16 op is promoted with a truncation that becomes a
# libcall (__truncsfbf2) where the CPU name lacks AVX512-BF16: x86-64-v4 on an
# AMD Zen 4 host, measured: a bf16 MLP's library did not load.
_BF16_IN_F32 = (
    "func.func(math-extend-to-supported-types{extra-types=f16 target-type=f32},"
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32})"
)


def llvm(o: CpuOptions) -> str:
    """loops -> LLVM dialect, with C wrappers so every function can be called."""
    passes = ["lowerline-widen-i1-memrefs"] if o.widen_i1 else []
    passes += [
        # bf16 truncations in integer ops: LLVM would call __truncdfbf2 or
        # __truncsfbf2 (libgcc before GCC 13 has neither), or use
        # vcvtneps2bf16, which flushes subnormals to zero.
        _BF16_IN_F32,
        "lowerline-expand-bf16-truncf",
        # Before any pass creates functions: only the user's get a wrapper.
        "func.func(llvm-request-c-wrappers)",
        # An integer division by a zero element traps (SIGFPE): check first.
        "lowerline-check-integer-division",
        # A failed cf.assert reports its message and skips the work it guards:
        # convert-cf-to-llvm would call abort() in the user's process.
        "lowerline-report-failed-asserts",
        # Complex arithmetic and functions (complex.exp, .log, .abs...) as
        # arith and math on the real and imaginary parts: convert-to-llvm
        # lowers only a few complex ops (create, re, im, add, sub, mul, div).
        "convert-complex-to-standard",
        # A max/min reduction's step as vmaxps, the NaN check off its chain.
        "lowerline-minmax-accumulators",
        # ...and a horizontal max/min as vmaxps halves, one NaN check.
        "lowerline-expand-minmax-reductions",
    ]
    if o.approximate_math:
        passes += [
            # f32 exp as a vectorizable polynomial: LLVM would call expf per lane.
            "lowerline-approximate-exp",
            # f32 tanh, erf, log, log1p, log2, expm1, exp2, sin, cos, atan, atan2, powf likewise.
            "lowerline-approximate-math",
        ]
    passes += [
        # fpowi / ipowi have no LLVM or libm lowering: outline software versions.
        "convert-math-to-funcs",
        # Before expand-strided-metadata, which folds the views it reads:
        # convert-vector-to-llvm gathers only from unit-stride memrefs.
        "func.func(lowerline-unit-stride-gathers)",
        "expand-strided-metadata",
        "lower-affine",
        "convert-scf-to-cf",
        # Math with an LLVM intrinsic first (sqrt, fabs, rsqrt as 1/sqrt, ...):
        # convert-math-to-libm would call `rsqrtf`, which libm does not have.
        # log1p is left to libm's log1pf; the LLVM pattern computes log(1 + x).
        "convert-math-to-llvm{approximate-log1p=false}",
        "convert-math-to-libm",
        *(["convert-async-to-llvm"] if o.parallel == "async" else []),
        # Before finalize-memref-to-llvm: transfers become plain or masked loads;
        # x86vector.avx512.dot (lowerline-vectorize's vdpbf16ps) its intrinsic.
        # amx.tile_* (lowerline-amx-tiles) their intrinsics likewise.
        # reassociate-fp-reductions: a row's horizontal float sum (the end of
        # a vector<64xf32> accumulator: softmax, layer norm, mean) as a tree
        # of shuffles; without it LLVM adds the 64 lanes one after another
        # (~200 cycles of latency per row). The lanes already accumulate
        # separately in the loop, so the sum's order was never torch's.
        "convert-vector-to-llvm{enable-x86vector enable-amx reassociate-fp-reductions}",
        # Allocations call _mlir_memref_to_llvm_alloc / _free, which the
        # library's runtime_support.c counts (CompiledModule.memory()).
        "finalize-memref-to-llvm{use-generic-functions=true}",
        "convert-to-llvm",
        "reconcile-unrealized-casts",
        # Fold the per-access constants and descriptor reads the lowering repeats.
        "canonicalize",
        "cse",
        # An op nothing above lowered fails here, named, not in code generation.
        "lowerline-require-llvm-dialect",
    ]
    return ",".join(passes)


# Stage name -> the pipeline that produces it from the previous stage.
CPU_STAGES: tuple[tuple[str, Callable[[CpuOptions], str]], ...] = (
    ("graph", graph),
    ("tiled", tiled),
    ("bufferized", bufferized),
    ("loops", loops),
    ("llvm", llvm),
)


def cpu(o: CpuOptions) -> str:
    """The whole CPU pipeline: linalg on tensors -> LLVM dialect."""
    return ",".join(build(o) for _, build in CPU_STAGES)


def module_pipeline(body: str) -> str:
    return f"builtin.module({body})"


_LLVM_OPTIONS = ("approximate_math", "widen_i1")
_ALL_OPTIONS = (
    "target",
    "tile",
    "winograd",
    "conv_channel_vectors",
    "split_strided_columns",
    "num_threads",
    "parallel",
    "buffer_reuse",
    "arena",
    "time_kernels",
    "approximate_math",
    "widen_i1",
)
# The named pipelines of these stages, as data: lowerline.pipeline.registry
# reads this tuple; this module never imports the registry.
PIPELINES: tuple[NamedPipeline, ...] = tuple(
    NamedPipeline(flag, summary, CpuOptions, build, uses)
    for flag, summary, build, uses in (
        (
            "lowerline-to-graph",
            "linalg on tensors -> graph (elementwise fusion, folding)",
            graph,
            (),
        ),
        (
            "lowerline-to-tiled",
            "graph -> tiled (weights folded, tile and fuse, vectorize)",
            tiled,
            ("target", "tile", "winograd", "conv_channel_vectors", "split_strided_columns"),
        ),
        (
            "lowerline-to-bufferized",
            "graph -> bufferized (memrefs, results as out-params)",
            bufferized,
            ("buffer_reuse", "arena", "target", "num_threads", "parallel"),
        ),
        (
            "lowerline-to-loops",
            "bufferized -> loops (scf, OpenMP)",
            loops,
            ("target", "num_threads", "parallel", "time_kernels"),
        ),
        ("lowerline-to-llvm", "loops -> LLVM dialect (C-callable wrappers)", llvm, _LLVM_OPTIONS),
        (
            "lowerline-cpu-pipeline",
            "linalg on tensors -> LLVM dialect: every CPU stage",
            cpu,
            _ALL_OPTIONS,
        ),
    )
)
