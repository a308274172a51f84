"""``lowerline-vectorize``: vectorize the tiles lowerline-tile-and-fuse planned.

Every linalg op carrying ``lowerline.vector_sizes`` is vectorized at that
shape with ``transform.structured.vectorize`` (masked where a tile is
partial). Ops with ``lowerline.contract`` become ``vector.contract`` (the
named-contraction form: plain vectorization would give broadcast + reduce)
and are lowered to outer products, i.e. one broadcast and ``nr / lanes``
FMAs per row of the register tile. The accumulators are then hoisted out of
the k loop (``hoist_loop_invariant_subsets``) and everything is lowered to
1-D vector ops that ``convert-vector-to-llvm`` takes: transfers of rank 1,
transposes, broadcasts, multi-reductions (inner-reduction strategy) and
shape casts (alone: with canonicalization in the same pattern set they loop
forever). A 2-D transpose (lowerline-tile-and-fuse's square blocks of an
NCHW <-> NHWC transpose) becomes one ``vector.shuffle`` of the flattened
block (upstream's ``shuffle_1d``), which LLVM lowers to a few ``vpermb`` /
``vpermt2ps``; the default (``eltwise``) extracts and inserts every element:
one thread, min of 1500 calls, loaded machine, f32 NCHW -> NHWC 64x56x56
43-52 -> 33-36 us, 2-D 256x512 43-50 -> 34-36 us, convblock int8's u8
input transpose 20.7 -> 10.7 us and f32 output transpose 30.7 -> 23.7 us.

An op that does not vectorize (a gather, an unsupported body) is left as it
is and becomes scalar loops; a remark (``lowerline.pipeline.remarks``) says
so, with the vectorizer's message and what in the op it cannot handle, and
``explain`` prints those remarks. Upstream has the
mechanisms but no pass that vectorizes chosen ops at chosen sizes: the
transform dialect needs a script, which this pass writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.cpu.tile_plan import bf16_dot_lanes
from lowerline.passes.support.linalg_info import (
    indexing_maps,
    iterator_kinds,
    loop_sizes,
    static_loop_sizes,
)
from lowerline.passes.support.transform_scripts import ANY, apply_script
from lowerline.passes.tiling.bf16_dot import bf16_dot_products, extend_extracted_lanes
from lowerline.passes.tiling.int8_dot import (
    int8_dot_products,
    widen_batched_integer_contractions,
)
from lowerline.passes.tiling.splat_reads import fold_reads_of_splat_writes, forward_whole_writes
from lowerline.passes.tiling.window_tiles import deinterleave_strided_reads
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, PassFailed, ops_matching
from lowerline.pipeline.protocol import CONTRACT, EXACT_ROWS, VECTOR_SIZES, VECTORIZE_ME
from lowerline.pipeline.remarks import FALLBACK, Remark, about, publish
from lowerline.targets import check_cpu_target, cpu_target

_FUNCS = f"""  %f = transform.structured.match ops{{["func.func"]}} in %root : ({ANY}) -> {ANY}
"""
_CONTRACTIONS = f"""  transform.apply_patterns to %f {{
    transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
    transform.apply_patterns.vector.transfer_permutation_patterns
    transform.apply_patterns.vector.lower_masked_transfers
  }} : {ANY}
"""
# Accumulators out of the k loops (CPU: they stay in registers).
_HOIST = f"""  transform.apply_patterns to %f {{
    transform.apply_patterns.canonicalization
    transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
  }} : {ANY}
  %loops = transform.structured.match ops{{["scf.for"]}} in %root : ({ANY}) -> {ANY}
  transform.foreach %loops : {ANY} {{
  ^bb0(%loop: {ANY}):
    transform.apply_licm to %loop : {ANY}
    transform.loop.hoist_loop_invariant_subsets %loop : {ANY}
  }}
  transform.apply_patterns to %f {{
    transform.apply_patterns.canonicalization
  }} : {ANY}
"""
_TO_RANK_1 = f"""  transform.apply_patterns to %f {{
    transform.apply_patterns.vector.cast_away_vector_leading_one_dim
  }} : {ANY}
  transform.apply_patterns to %f {{
    transform.apply_patterns.vector.lower_masks
    transform.apply_patterns.vector.lower_outerproduct
    transform.apply_patterns.vector.transfer_permutation_patterns
    transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
    transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
    transform.apply_patterns.vector.lower_broadcast
    transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
  }} : {ANY}
  transform.apply_patterns to %f {{
    transform.apply_patterns.vector.lower_shape_cast
  }} : {ANY}
"""
LOWERING = _FUNCS + _CONTRACTIONS + _HOIST + _TO_RANK_1
# Without hoisting (GPU threads: their accumulator tiles live in shared memory).
LOWERING_IN_PLACE = _FUNCS + _CONTRACTIONS + _TO_RANK_1


_DYNAMIC = ir.ShapedType.get_dynamic_size()


def _tagged(module: ir.Operation) -> list[ir.Operation]:
    # Fused ops leave dead copies behind (removed by the next canonicalize).
    return ops_matching(
        module, lambda op: VECTOR_SIZES.has(op) and any(list(r.uses) for r in op.results)
    )


def _script(op: ir.Operation, index: int) -> str:
    sizes = VECTOR_SIZES.require(op)
    static = static_loop_sizes(op)
    known = loop_sizes(op) if static is None else None
    if known is not None and len(known) == len(sizes):
        # A static row piece of a tile with a dynamic, masked column count
        # (the 4-, 2- and 1-row pieces of a dynamic M and N): its rows at
        # their own power-of-two count, the dynamic dims masked at the planned
        # size (else a 1-row piece is an 8-row masked tile: 8x the FMAs).
        sizes = [
            s if s != _DYNAMIC and s < v and s & (s - 1) == 0 else v
            for v, s in zip(sizes, known, strict=True)
        ]
    if static is not None and len(static) == len(sizes):
        # A peeled piece of a tile whose width is a power of two (a
        # convolution's 16 + 8 tail columns) is vectorized at that width,
        # unmasked; other widths keep the planned size with a mask (LLVM
        # splits a 24-lane vector across loop iterations lane by lane: 10x
        # slower, measured). In a dynamic M's row piece (EXACT_ROWS) a loop
        # no operand's innermost dim follows is unrolled into whole vectors,
        # never split into lanes: any size of it is exact (a 7-row piece is 7
        # rows of FMAs, not 8 with a masked row read at every step of k). Only
        # there: every op of such a piece agrees, where a static tile's int8
        # contraction (all its loops lanes) would keep a mask its epilogue lost.
        # A piece wider than planned (the row pieces of a dynamic M, widened
        # along N) is vectorized at its own size.
        lanes = _lane_loops(op) if EXACT_ROWS.has(op) else set(range(len(sizes)))
        sizes = [
            s if s > v or (s < v and (s & (s - 1) == 0 or d not in lanes)) else v
            for d, (v, s) in enumerate(zip(sizes, static, strict=True))
        ]
    VECTORIZE_ME.set(op, index)
    contract = " {create_named_contraction}" if CONTRACT.has(op) else _gathers(op)
    return (
        f"  %op = transform.structured.match attributes{{{VECTORIZE_ME.entry(index)}}} in %root"
        f" : ({ANY}) -> {ANY}\n"
        f"  transform.structured.vectorize %op vector_sizes {sizes}{contract} : {ANY}\n"
    )


def _lane_loops(op: ir.Operation) -> set[int]:
    """The loops that index some operand's innermost dim (those vectors'
    lanes); every loop when such an index is not a plain loop (a
    convolution's ``ow + kw``)."""
    maps = indexing_maps(op)
    lanes = set()
    for amap in maps:
        if not amap.results:
            continue
        last = amap.results[-1]
        if not isinstance(last, ir.AffineDimExpr):
            return set(range(maps[0].n_dims))
        lanes.add(ir.AffineDimExpr(last).position)
    return lanes


def _gathers(op: ir.Operation) -> str:
    """The vectorizer's option for reads of other tensors at computed
    indices (``tensor.extract`` in the body: bilinear upsampling's four
    taps, ``index_select``): without it upstream refuses every read of rank
    above 1, and the op stays scalar loops. With it each read is a
    broadcast (indices the same in every lane), a contiguous vector read,
    or a ``vector.gather``."""
    if op.name != "linalg.generic":
        return ""
    body = op.regions[0].blocks[0].operations
    return " {vectorize_nd_extract}" if any(o.name == "tensor.extract" for o in body) else ""


# Body ops the vectorizer turns into vector ops; others (cf.assert, tensor
# reads) are named in the remark of an op that did not vectorize.
_VECTOR_DIALECTS = ("arith.", "math.", "linalg.", "affine.", "index.")


def _obstacles(op: ir.Operation) -> list[str]:
    """What in ``op`` the vectorizer is likely to refuse: a hint for the remark
    (upstream's message is only "Attempted to vectorize, but failed")."""
    if op.name != "linalg.generic":
        return []
    body = op.regions[0].blocks[0].operations
    found = sorted({o.name for o in body if not o.name.startswith(_VECTOR_DIALECTS)})
    hints = [f"its body has {name}" for name in found]
    if len(op.results) > 1 and "reduction" in iterator_kinds(op):
        indexed = any(o.name == "linalg.index" for o in body)
        kind = "an argmax-like reduction" if indexed else "a reduction"
        hints.append(f"{kind} with {len(op.results)} results")
    return hints


def _not_vectorized(op: ir.Operation, failure: str) -> Remark:
    hints = "; ".join(_obstacles(op))
    why = f"{failure} ({hints})" if hints else failure
    return about(op, Vectorize.flag, f"left as loops: not vectorized: {why}", FALLBACK)


@dataclass(frozen=True)
class Vectorize(Pass):
    flag = "lowerline-vectorize"
    summary = "Vectorize the tiles planned by lowerline-tile-and-fuse; contractions to FMAs"
    anchor = "builtin.module"

    explain: bool = opt(False, "list the ops that did not vectorize (and why) on stderr as remarks")
    target: str = opt(
        "",
        "CPU target (a name targets.py knows): with AVX-512 VNNI or Arm dotprod, 4-deep int8 "
        "contractions become vpdpbusd or sdot, with AVX512-BF16 2-deep bf16 ones vdpbf16ps; "
        "empty: none",
        check=lambda value: check_cpu_target(value) if value else None,
    )

    def run(self, op: ir.Operation) -> None:
        left: list[Remark] = []
        for index, target in enumerate(_tagged(op)):
            failure = apply_script(op, _script(target, index))
            if failure:
                left.append(_not_vectorized(target, failure))
        # Whatever did not vectorize keeps no tags; the rest were replaced.
        for target in _tagged(op):
            for attr in (VECTOR_SIZES, CONTRACT, VECTORIZE_ME):
                attr.remove(target)
        # Stride-2 window steps: contiguous loads and shuffles, before the
        # transfers are lowered (lowerline.passes.tiling.window_tiles).
        deinterleave_strided_reads(op)
        if self.target:
            int8_dot_products(op, cpu_target(self.target))
        if self.target and bf16_dot_lanes(cpu_target(self.target)):
            bf16_dot_products(op)  # vdpbf16ps (lowerline.passes.tiling.bf16_dot)
        widen_batched_integer_contractions(op)
        failure = apply_script(op, LOWERING)
        if failure:
            op.location.emit_error(f"lowering the vector ops failed: {failure}")
            raise PassFailed()
        # bf16 columns of A widened lane by lane (lowerline.passes.tiling.bf16_dot).
        extend_extracted_lanes(op)
        # Accumulators that start from a fused fill: constants, not a tile read back.
        fold_reads_of_splat_writes(op)
        # ...or from a fused bias, and epilogues reading the accumulators
        # stored: the written vectors, not a masked store and load.
        forward_whole_writes(op)
        publish(left, self.explain)
