"""The ops the CPU tiled stage is allowed to leave as plain loops, and why.

``CompiledModule.fallbacks`` lists every op of a compiled model that was not
tiled and vectorized (it becomes scalar loops) with its pass's reason. Every
zoo case and every benchmark model is checked against this list
(``zoo_support.run_case``): an unexpected fallback fails the case, so a change
that de-optimizes a model is noticed.

An entry names the op, a piece of the reason, and why this is acceptable
today: an op family lowerline has no tiled kernel for yet, or a small op off
the hot path. ``cases`` limits an entry to the zoo cases named (empty: every
zoo case). A benchmark model (bench/speed.py, cases ``bench_<name>``) is
allowed only the entries that name it in ``bench``, and those never for a hot
op: fix those instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from lowerline.pipeline.remarks import Remark


@dataclass(frozen=True)
class Expected:
    op: str  # the op name, e.g. "linalg.pooling_nchw_max"
    reason: str  # a substring of the fallback's message
    why: str  # why a reviewer accepts it today
    # The zoo cases it may occur in; () = every zoo case (never a benchmark model).
    cases: tuple[str, ...] = ()
    # The benchmark models (``bench_<name>``) it may occur in: each named, and
    # only for an op off the hot path.
    bench: tuple[str, ...] = ()

    def matches(self, case: str, fallback: Remark) -> bool:
        if fallback.op != self.op or self.reason not in fallback.message:
            return False
        if case.startswith("bench_"):
            return case in self.bench
        return not self.cases or case in self.cases


# test_zoo_complex.py's cases.
COMPLEX_CASES = (
    "concat_complex128",
    "arithmetic_broadcast_batch1",
    "arithmetic_complex128_batch4",
    "with_real_tensors_and_scalars",
    "abs_angle_real_imag",
    "abs_of_large_parts",
    "exp",
    "neg_log_reciprocal",
    "angle_of_reals",
    "view_as_real_and_back",
    "polar_magnitude",
    "fft_ifft_batch1",
    "sqrt_asin_sum",
    "rfft",
    "stft",
)
_NO_PLAN = "not an elementwise, reduction, fill, copy, transpose or broadcast op"

EXPECTED: tuple[Expected, ...] = (
    Expected(
        "linalg.conv_2d_nchw_fchw",
        "mixed or unsupported element types",
        "half-precision convolutions: the convolution kernels are f32/f64 only",
        cases=("f16_conv2d",),
    ),
    # Reads at computed indices (gathers): the vectorizer fails on their
    # tensor.extract; a vector gather lowering is not implemented.
    Expected(
        "linalg.generic",
        "its body has tensor.extract",
        "gathers (gather, advanced indexing, roll) and the ops torch-mlir writes as "
        "gathers (adaptive and 1-D pooling): no vector gather yet; embedding lookups "
        "and index_select: only their bounds check, one per index (frontend/gathers.py), "
        "their rows are vector gathers",
        cases=(
            "embedding",
            "embedding_i32_ids",
            "gather_dim1",
            "text_classifier",
            "index_select",
            "advanced_indexing",
            "flip_roll",
            "adaptive_avg_pool2d",
            "pool1d",
        ),
    ),
    Expected(
        "linalg.generic",
        "its body has tensor.extract",
        "the index and update lists torch-mlir gathers for a scatter (scatter, "
        "scatter_reduce, index_put, max_unpool), and the gathers and pooling with "
        "indices of test_zoo_tmtensor: no vector gather yet",
        cases=(
            "scatter_src_unique",
            "scatter_value_dim1",
            "scatter_add_duplicates",
            *(
                f"scatter_reduce_{reduce}_{self}"
                for reduce in ("sum", "prod", "amax", "amin", "mean")
                for self in ("self", "noself")
            ),
            "index_put_two_indices_negative",
            "max_unpool2d_odd",
            "gather_dim1_3d",
            "take_along_dim_argsort",
            "index_select_dim2_int",
            "advanced_index_rows_batch1",
            "max_pool2d_with_indices_odd",
            "adaptive_max_pool2d_with_indices",
        ),
    ),
    Expected(
        "linalg.generic",
        "its body has tensor.extract",
        "torch-mlir writes as_strided (_reshape_alias) as a gather "
        "(test_zoo_conformance_fixes). Upsampling's gathers are vectorized "
        "(vector.gather, lowerline-vectorize) and no longer listed",
        cases=tuple(f"reshape_alias_strides_b{batch}" for batch in (1, 8)),
    ),
    Expected(
        "linalg.map",
        _NO_PLAN,
        "scatter_reduce's mean: torch-mlir divides the sums by the counts in a "
        "linalg.map, which tile-and-fuse has no plan for yet; one pass over the output",
        cases=("scatter_reduce_mean_self", "scatter_reduce_mean_noself"),
    ),
    Expected(
        "linalg.generic",
        "an argmax-like reduction with 2 results",
        "max with indices, whose index is an output: a reduction with two results "
        "does not vectorize (upstream 22). Unused indices (softmax's row maximum) are "
        "dropped by lowerline-drop-dead-results and vectorize; argmax/argmin are two "
        "single-result reductions (frontend decompositions)",
        cases=("max_with_indices", "dict_outputs"),
    ),
    # Nothing to tile.
    Expected(
        "linalg.fill",
        "a 0-d result (one element)",
        "a 0-d (one-element) tensor: no loops to tile",
    ),
    Expected(
        "linalg.generic",
        "a 0-d result (one element)",
        "a 0-d (one-element) tensor: no loops to tile",
    ),
    *(
        Expected(
            op, "an empty tensor: nothing to compute", "an empty tensor: no element to compute"
        )
        for op in (
            "linalg.generic",
            "linalg.fill",
            "linalg.transpose",
            "linalg.copy",
            "linalg.matmul",
            "linalg.batch_matmul",
            "linalg.conv_2d_nchw_fchw",
            "linalg.broadcast",
        )
    ),
    Expected(
        "linalg.generic",
        "its body has complex.",
        "complex arithmetic: MLIR has no vector of complex elements, so an op on complex "
        "values stays scalar loops (correctness first; not in any benchmark model)",
        cases=COMPLEX_CASES,
    ),
    *(
        Expected(
            op,
            reason,
            "stft: torch-mlir's DFT is a complex matmul (with its zero fill) of a window "
            "gathered from the reflect-padded signal; no tiled kernel for complex elements "
            "(correctness first)",
            cases=("stft",),
        )
        for op, reason in (
            ("linalg.matmul", "no pass reported why"),
            ("linalg.fill", "no pass reported why"),
            ("linalg.generic", "(its body has tensor.extract)"),
            # The complex.create of the gathered real and imaginary parts: not
            # planned at all since complex elements have no tiled kernel.
            ("linalg.generic", "no pass reported why"),
        )
    ),
    Expected(
        "linalg.transpose",
        "Attempted to vectorize, but failed",
        "fft along a dim that is not the last: the complex result moved back to its dim, "
        "a transpose of complex elements, which have no vector form",
        cases=("fft_ifft_batch1",),
    ),
    # Off the hot path.
    Expected(
        "linalg.generic",
        "(its body has cf.assert)",
        "a reciprocal: torch-mlir's body asserts the divisor is not zero (cf.assert), which "
        "has no vector form. In the models, batch norm's per-channel 1/sqrt(var + eps) on "
        "the running variance: one scalar per channel (64 in bench_convblock, against "
        "2 x 231 MFLOP of convolutions); in the ops, torch.reciprocal (and 1 / x)",
        bench=("bench_convblock",),
    ),
    # test_zoo_last_ops.py's cases.
    Expected(
        "linalg.generic",
        "its body has tensor.extract",
        "gathers: the update lists of the legacy scatter(reduce=...) (scatter_reduce), "
        "pooling with indices, the adaptive max pool's windows, as_strided_copy, roll, "
        "the diagonal_scatter spread and as_strided_scatter's index_put: "
        "no vector gather yet",
        cases=tuple(
            f"{name}_b{batch}"
            for name in (
                "scatter_legacy_reduce",
                "max_pool1d_indices",
                "adaptive_max_pool1d",
                "adaptive_max_pool2d_unequal",
                "view_copies",
                "diagonal_as_strided_scatter",
                "isfinite_roll",
            )
            for batch in (1, 8)
        ),
    ),
    Expected(
        "linalg.generic",
        "its body has complex.",
        "isfinite of a complex tensor reads its parts (view_as_real): no vector of "
        "complex elements",
        cases=("isfinite_roll_b1", "isfinite_roll_b8"),
    ),
)


def unexpected(case: str, fallbacks: list[Remark]) -> list[Remark]:
    """The fallbacks of ``case`` that no entry of ``EXPECTED`` allows."""
    return [f for f in fallbacks if not any(e.matches(case, f) for e in EXPECTED)]


def check_fallbacks(case: str, fallbacks: list[Remark]) -> None:
    """Fail ``case`` on an unexpected fallback, naming each with its reason."""
    found = unexpected(case, fallbacks)
    listing = "\n".join(
        f"  {f.op} at {f.source_line or '?'}: {f.message} [{f.pass_flag}]" for f in found
    )
    assert not found, (
        f"{case}: {len(found)} op(s) left as plain loops unexpectedly (fix them, or add an "
        f"entry with its reason to expected_fallbacks.EXPECTED):\n{listing}"
    )
