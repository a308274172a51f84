"""``lowerline-gpu-tile-and-fuse``: contractions tiled into thread blocks, on tensors.

The GPU half of the ``tiled`` stage. It reuses the analysis of
``lowerline-tile-and-fuse`` (the same roots: matmul, batch matmul, NCHW
convolution; the same fused ``linalg.fill`` init and elementwise epilogue
chain, refused for the same reasons) and replaces its decisions with GPU
ones from ``lowerline.gpu.plan``:

- the group's last op is tiled with an ``scf.forall`` mapped to
  ``#gpu.block<linear_dim_*>``, one block per output tile, and the root,
  its fill and the epilogue are fused into it;
- the root's reduction (k, or input channels) becomes an ``scf.for`` whose
  steps are the tiles that ``lowerline-gpu-distribute`` stages in shared
  memory after bufferization.

Thread-level tiling is left to ``lowerline-gpu-distribute``: promotion to
shared memory works on buffers, and the thread tiles must be cut from the
promoted op: the block forall carries the planned thread grid
(``lowerline.gpu_threads``; bufferization keeps a forall's attributes, not
those of the ops inside). Ops outside groups are mapped there too.

Upstream has the mechanisms (``tile_using_forall`` with GPU mappings,
``fuse_into_containing_op``, ``tile_using_for``) but no pass choosing
groups and tile sizes for a GPU target: that is this pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from lowerline.gpu.plan import (
    ContractionTiles,
    conv_tiles,
    fits,
    matmul_tiles,
    with_accumulator,
)
from lowerline.passes.support.linalg_info import indexing_maps
from lowerline.passes.support.transform_scripts import ANY, apply_script
from lowerline.passes.tiling.tile_and_fuse import (
    Group,
    element_bytes,
    forall_over_last,
    fuse_into,
    fused_producers_and_consumers,
    has_empty_tensor,
    ints,
    is_linalg,
    match,
    nest_members,
    strip_tags,
    tag_members,
    tensor_type,
)
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, defined_functions, resolve_target
from lowerline.pipeline.protocol import GPU_THREADS, LAST, NUM_RESULTS
from lowerline.pipeline.remarks import FALLBACK, Remark, about, publish
from lowerline.targets import GpuTarget, check_gpu_target, gpu_target

FLAG = "lowerline-gpu-tile-and-fuse"
_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")
_CONVOLUTIONS = ("linalg.conv_2d_nchw_fchw",)


def _ints_of(op: ir.Operation, name: str) -> tuple[int, int]:
    if name not in op.attributes:
        return (1, 1)
    values = [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]
    return (values[0], values[1])


def _contraction(op: ir.Operation, target: GpuTarget, eb: int) -> ContractionTiles | str:
    out, lhs = tensor_type(op.results[0]), tensor_type(op.operands[0])
    if out is None or lhs is None:
        return "dynamic shapes"
    dims = linalg.infer_contraction_dimensions(op)
    if dims is None or len(dims.m) != 1 or len(dims.n) != 1 or len(dims.k) != 1:
        return "not a single m/n/k contraction"
    *batch, m, n = out.shape
    return matmul_tiles(target, len(batch), m, n, lhs.shape[-1], eb)


def _conv(op: ir.Operation, target: GpuTarget, eb: int) -> ContractionTiles | str:
    out, flt = tensor_type(op.results[0]), tensor_type(op.operands[1])
    if out is None or flt is None:
        return "dynamic shapes"
    _, f, oh, ow = out.shape
    c, kh, kw = flt.shape[1:]
    strides, dilations = _ints_of(op, "strides"), _ints_of(op, "dilations")
    return conv_tiles(target, f, oh, ow, c, kh, kw, strides, dilations, eb)


def _own_fill(op: ir.Operation) -> None:
    """A fill shared by several roots (CSE merges equal fills) is cloned for
    ``op``, so that it fuses into the root's block (one fill per tile)."""
    init = op.operands[len(op.operands) - 1]
    is_fill = isinstance(init, ir.OpResult) and init.owner.operation.name == "linalg.fill"
    if is_fill and len(list(init.uses)) > 1:
        with ir.InsertionPoint(op):
            clone = init.owner.operation.clone()
        op.operands[len(op.operands) - 1] = clone.results[0]


def _group(op: ir.Operation, name: str, target: GpuTarget, earlier: list[Group]) -> Group | str:
    if has_empty_tensor(op):
        return "an empty tensor: nothing to compute"
    eb = element_bytes(op)
    if eb is None:
        types = {str(v.type) for v in op.operands}
        if not any("f16" in t or "bf16" in t for t in types):
            return "mixed or unsupported element types"
        eb = 2
    plan = _conv if op.name in _CONVOLUTIONS else _contraction
    tiles = plan(op, target, eb)
    if isinstance(tiles, str):
        return tiles
    if reason := fits(tiles, target):
        return reason
    group = Group(name, op.name.removeprefix("linalg."), op, tiles=tiles, pass_flag=FLAG)
    rank = len(tiles.thread_counts)
    group.par = list(tiles.block[:rank])
    group.red = list(tiles.step)
    _own_fill(op)
    fused_producers_and_consumers(group)
    _drop_claimed(group, earlier)
    if not _accumulate_in_place(group):  # the accumulator tile in shared memory
        tiles = with_accumulator(tiles, tensor_type(op.results[0]))
        if reason := fits(tiles, target):
            return reason
        group.tiles = tiles
    return group


def _block_mapping(sizes: list[int]) -> str:
    """Linear block dims, the innermost tiled loop fastest (linear_dim_0)."""
    loops = sum(1 for s in sizes if s)
    dims = [f"#gpu.block<linear_dim_{loops - 1 - i}>" for i in range(loops)]
    return "[" + ", ".join(dims) + "]"


def group_script(g: Group) -> str:
    """Block forall from the group's last op; root, epilogue and fill fused in;
    the root's reduction tiled into shared-memory steps."""
    inner = nest_members(g)
    text = forall_over_last(g, _block_mapping(g.par))
    if not isinstance(g.tiles, ContractionTiles):
        raise ValueError(f"{g.name} has no GPU tile plan")
    threads = ", ".join(str(t) for t in g.tiles.thread_counts)
    text += (
        f"  %threads = transform.param.constant array<i64: {threads}> -> !transform.any_param\n"
        f'  transform.annotate %forall "{GPU_THREADS.name}" = %threads'
        f" : {ANY}, !transform.any_param\n"
    )
    text += fuse_into(inner, "%forall", "p", "%root")
    text += match("%mm", f"{g.name}.root", "%forall")
    text += (
        f"  %mmk, %kloop = transform.structured.tile_using_for %mm tile_sizes "
        f"{ints(g.red)} : ({ANY}) -> ({ANY}, {ANY})\n"
    )
    return text


def _in_place(consumer: ir.Operation, current: ir.Value) -> ir.Operation:
    """``consumer`` rewritten to read ``current`` as its init (its output)
    instead of as an input, when its own init is an unread ``tensor.empty``
    of the same type: the epilogue then updates the accumulator tile in
    place, and bufferization gives the whole group one buffer (the output
    tile); otherwise the accumulator gets a block-local buffer, whose size
    is dynamic on partial tiles. Returns the op now in the chain."""
    n_in = len(consumer.operands) - 1
    init = consumer.operands[n_in]
    body = consumer.regions[0].blocks[0]
    maps = indexing_maps(consumer)
    reads = [i for i in range(n_in) if consumer.operands[i] == current]
    if (
        len(consumer.results) != 1
        or len(reads) != 1
        or maps[reads[0]] != maps[n_in]
        or init.type != current.type
        or not isinstance(init, ir.OpResult)
        or init.owner.operation.name != "tensor.empty"
        or list(body.arguments[n_in].uses)
    ):
        return consumer
    read = reads[0]
    inputs = [v for i, v in enumerate(consumer.operands[:n_in]) if i != read]
    new_maps = [ir.AffineMapAttr.get(m) for i, m in enumerate(maps) if i != read]
    with ir.InsertionPoint(consumer), consumer.location:
        new = linalg.GenericOp_(
            inputs, [current], ir.ArrayAttr.get(new_maps), consumer.attributes["iterator_types"]
        )
    new_body = new.regions[0].blocks[0]
    old_args = list(body.arguments)
    new_args = list(new_body.arguments)
    kept = [a for i, a in enumerate(old_args[:n_in]) if i != read]
    for old, fresh in zip(kept, new_args[:-1], strict=True):
        old.replace_all_uses_with(fresh)
    old_args[read].replace_all_uses_with(new_args[-1])
    for op in list(body.operations):
        new_body.append(op.operation)
    consumer.results[0].replace_all_uses_with(new.results[0])
    consumer.erase()
    return new.operation


def _accumulate_in_place(group: Group) -> bool:
    """Rewrite the epilogue to update the accumulator in place; whether the
    whole chain does (else the block needs an accumulator buffer)."""
    current = group.root.results[0]
    in_place = True
    for index, consumer in enumerate(group.consumers):
        group.consumers[index] = _in_place(consumer, current)
        init = group.consumers[index].operands[len(group.consumers[index].operands) - 1]
        in_place = in_place and init == current
        current = group.consumers[index].results[0]
    return in_place


def _tag(group: Group) -> None:
    tag_members(group)
    LAST.set(group.last, group.name)


def _plan(func: ir.Operation, target: GpuTarget, counter: list[int], remarks: list[Remark]) -> list:
    # The roots first: planning rewrites epilogues (new ops, old ones erased).
    roots = [
        op.operation
        for op in func.regions[0].blocks[0].operations
        if is_linalg(op.operation) and op.operation.name in _CONTRACTIONS + _CONVOLUTIONS
    ]
    groups: list[Group] = []
    for op in roots:
        found = _group(op, f"g{counter[0]}", target, groups)
        if isinstance(found, str):
            message = f"not tiled (one point per thread): {found}"
            remarks.append(about(op, FLAG, message, FALLBACK))
            continue
        counter[0] += 1
        groups.append(found)
    return groups


def _drop_claimed(group: Group, earlier: list[Group]) -> None:
    """Cut ``group``'s epilogue at an op an earlier group fused already (a
    residual add joining two convolutions' results): one nest per op."""
    claimed = [c for g in earlier for c in g.consumers]
    for index, consumer in enumerate(group.consumers):
        if any(consumer == c for c in claimed):
            group.refuse(consumer, f"not fused into {group.name}: fused into an earlier group")
            del group.consumers[index:]
            return


def _remarks(g: Group) -> list[Remark]:
    """The group's decision (on its root), its refusals and its failure."""
    decision = f"{g.name}: {g.kind}; fused {g.members_text}; tiles: {g.plan.describe()}"
    found = [g.remark(decision), *g.refused]
    if g.failure:
        message = f"not tiled (one point per thread): {g.name} was not transformed: {g.failure}"
        found.append(g.remark(message, FALLBACK))
    return found


def _record_results(func: ir.Operation) -> None:
    """The host-buffer pass must know which arguments become outputs."""
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    NUM_RESULTS.set(func, len(ftype.results))


@dataclass(frozen=True)
class GpuTileAndFuse(Pass):
    flag = FLAG
    summary = "Tile contractions and their epilogues into GPU thread blocks (tensors)"
    anchor = "builtin.module"

    target: str = opt(
        "sm_80", "GPU target: a name of lowerline.targets.GPU_TARGETS", check=check_gpu_target
    )
    explain: bool = opt(False, "print the groups, tile sizes and refusals to stderr as remarks")

    def run(self, op: ir.Operation) -> None:
        target = resolve_target(gpu_target, self.target, op)
        remarks = [about(op, FLAG, f"target {target.name}")]
        counter, groups = [0], []
        for func in defined_functions(op):
            _record_results(func)
            groups += _plan(func, target, counter, remarks)
        for group in groups:
            group.freeze_text()
            _tag(group)
        for group in groups:
            group.failure = apply_script(op, group_script(group))
            remarks += _remarks(group)
        strip_tags(op)
        publish(remarks, self.explain)
