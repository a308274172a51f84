"""``lowerline-gpu-distribute``: every linalg op on buffers into GPU blocks and threads.

Runs after bufferization, on the block foralls ``lowerline-gpu-tile-and-fuse``
left and on everything else. Its result is the *mapped* IR: block foralls
(``#gpu.block``) holding thread foralls (``#gpu.thread``) and copies into
shared memory, still structured loops, so it also runs on the CPU (thread
foralls one after the other: each completes before the next starts, which is
what the barriers placed between them on the GPU guarantee).

- **Contractions** (ops carrying ``lowerline.gpu_threads``, inside the k loop
  of a block forall): both operand tiles are promoted to workgroup (shared)
  memory with ``transform.structured.promote``; the promoted op is tiled
  into a thread forall (``num_threads`` = the planned thread grid, each thread
  a ``4 x 4`` output tile); the copies into shared memory are spread over the
  same threads, four contiguous elements per thread where rows allow.
- **The rest of a block** (the fill, the epilogue, copies bufferization left):
  thread foralls over the same number of threads.
- **Ops outside blocks** (elementwise, reductions, pooling, copies from
  ``memref.copy``, which become ``linalg.copy`` first): one output point per
  thread, ``gpu_plan.THREADS`` per block; the reduction dims stay loops.
- **Anything else on the host side** that would touch device memory (a
  ``memref.load``, an unknown op) is reported, all such ops at once.

Upstream has the mechanisms (``tile_using_forall`` with ``num_threads``,
``promote`` to a memory space) but no pass deciding what runs in which block
and thread for a whole model: that is this pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref, scf

from lowerline.gpu.plan import THREADS, point_tiles, thread_split
from lowerline.passes.bufferization.strided_copies_to_linalg import copies_to_linalg
from lowerline.passes.gpu.alignment import aligned_vector
from lowerline.passes.gpu.byte_dots import byte_dot_products
from lowerline.passes.gpu.mapping import WORKGROUP_SPACE, mapped_to
from lowerline.passes.support.linalg_info import describe, indexing_maps, iterator_kinds
from lowerline.passes.support.transform_scripts import ANY, apply_script, canonicalize
from lowerline.passes.tiling.vectorize import LOWERING_IN_PLACE
from lowerline.pipeline.pass_api import Pass, PassFailed, defined_functions, ops_matching
from lowerline.pipeline.protocol import GPU_BLOCK_THREADS, GPU_TAG, GPU_THREADS

# Shared memory as NVVM's address space 3 (what #gpu.address_space<workgroup>
# maps to): convert-vector-to-llvm, which lowers the kernels' vector accesses
# with their alignment, knows integer spaces only.
WORKGROUP = f"{WORKGROUP_SPACE} : i64"
VECTOR_BYTES = 16  # the widest GPU load: ld.global.v4.b32
_VIEW_OPS = (
    "memref.subview",
    "memref.expand_shape",
    "memref.collapse_shape",
    "memref.cast",
    "memref.reinterpret_cast",
    "memref.view",
)


# Host-side ops that only compute addresses or manage buffers: they stay on the host.
_HOST_OPS = {
    *_VIEW_OPS,
    "arith.constant",
    "ub.poison",
    "func.return",
    "memref.alloc",
    "memref.alloca",
    "memref.dealloc",
    "memref.get_global",
    "memref.assume_alignment",
    "scf.forall",
}


def _is_linalg(op: ir.Operation) -> bool:
    return op.name.startswith("linalg.") and op.name != "linalg.yield"


def _mapping(kind: str, loops: int) -> str:
    dims = [f"#gpu.{kind}<linear_dim_{loops - 1 - i}>" for i in range(loops)]
    return "[" + ", ".join(dims) + "]"


def _ints(values: list[int]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def _is_block_forall(op: ir.Operation) -> bool:
    return mapped_to(op, "block")


def _is_thread_forall(op: ir.Operation) -> bool:
    return mapped_to(op, "thread")


def _inside_thread_forall(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if _is_thread_forall(parent):
            return True
        parent = parent.parent
    return False


def _static_shape(value: ir.Value) -> list[int] | None:
    shaped = ir.ShapedType(value.type)
    return list(shaped.shape) if shaped.has_static_shape else None


def _bound_shape(value: ir.Value) -> list[int] | None:
    """Static shape of a buffer, or of the buffer a dynamic subview cuts from
    (the promoted tiles: a dynamic view of a static shared buffer)."""
    while True:
        shape = _static_shape(value)
        if shape is not None:
            return shape
        owner = value.owner.operation if isinstance(value, ir.OpResult) else None
        if owner is None or owner.name != "memref.subview":
            return None
        value = owner.operands[0]


def iteration_shape(op: ir.Operation) -> list[int] | None:
    """Static loop bounds of a linalg op on buffers (bounded by the buffers
    the dynamic tiles are cut from); None when unknown."""
    kinds = iterator_kinds(op)
    shape = [0] * len(kinds)
    for operand, amap in zip(op.operands, indexing_maps(op), strict=False):
        if not isinstance(operand.type, ir.MemRefType):
            continue
        bound = _bound_shape(operand)
        if bound is None:
            return None
        for result, size in zip(amap.results, bound, strict=True):
            if isinstance(result, ir.AffineDimExpr):
                shape[result.position] = max(shape[result.position], size)
    return shape if all(shape) else None


def _tag(op: ir.Operation, tag: str) -> str:
    GPU_TAG.set(op, tag)
    return tag


def _match(var: str, tag: str) -> str:
    return (
        f"  {var} = transform.structured.match attributes{{{GPU_TAG.entry(tag)}}} in %root"
        f" : ({ANY}) -> {ANY}\n"
    )


def _thread_tile(var: str, counts: list[int]) -> str:
    loops = sum(1 for c in counts if c)
    return (
        f"  {var}_t, {var}_f = transform.structured.tile_using_forall {var} num_threads "
        f"{_ints(counts)} (mapping = {_mapping('thread', loops)}) : ({ANY}) -> ({ANY}, {ANY})\n"
    )


@dataclass
class _Block:
    forall: ir.Operation
    name: str
    threads: int = 0


def _parallel_counts(op: ir.Operation, budget: int, inner_vector: int = 1) -> list[int] | None:
    """Threads per loop of ``op`` (0 on reductions), ``budget`` in all."""
    kinds = iterator_kinds(op)
    # Without a static bound (tiles of strided windows), assume every loop
    # is long: all threads on the innermost one, the rest looped.
    shape = iteration_shape(op) or [budget * inner_vector] * len(kinds)
    par = [s for s, k in zip(shape, kinds, strict=True) if k == "parallel"]
    if not par:
        return None
    split = iter(thread_split(par, budget, inner_vector))
    return [next(split) if k == "parallel" else 0 for k in kinds]


def _ensure_subviews(root: ir.Operation) -> None:
    """``promote`` copies subviews only: an operand that is a whole buffer
    (the block's tile is the whole input) gets an identity subview."""
    for index in (0, 1):
        value = root.operands[index]
        owner = value.owner.operation if isinstance(value, ir.OpResult) else None
        if owner is not None and owner.name == "memref.subview":
            continue
        shape = _static_shape(value)
        if shape is None:
            continue
        with ir.InsertionPoint(root), root.location:
            view = memref.SubViewOp(
                value.type, value, [], [], [], [0] * len(shape), shape, [1] * len(shape)
            )
        root.operands[index] = view.result


def _promote_root(block: _Block, root: ir.Operation) -> str:
    counts = GPU_THREADS.require(block.forall)
    block.threads = 1
    for c in counts:
        block.threads *= max(c, 1)
    kinds = iterator_kinds(root)
    counts += [0] * (len(kinds) - len(counts))
    tag = _tag(root, f"{block.name}.root")
    # Canonicalization between promotion and tiling folds the constant-size
    # views of the shared buffers to static shapes (the thread grid's bounds).
    promote = (
        f"  %pm = transform.structured.promote %mm {{operands_to_promote = [0, 1], "
        f"memory_space = {WORKGROUP}}} : ({ANY}) -> {ANY}\n"
    )
    funcs = f'  %funcs = transform.structured.match ops{{["func.func"]}} in %root : ({ANY}) -> '
    funcs += f"{ANY}\n"
    return (
        _match("%mm", tag)
        + promote
        + funcs
        + canonicalize("%funcs")
        + _match("%mm2", tag)
        + _thread_tile("%mm2", counts)
    )


_ROOTS = ("linalg.matmul", "linalg.batch_matmul", "linalg.conv_2d_nchw_fchw")


def _is_root(op: ir.Operation) -> bool:
    """The contraction of a planned block (lowerline-gpu-tile-and-fuse): in its
    reduction loop, or directly in the block when canonicalization removed a
    loop of one step (k <= the step)."""
    return op.name in _ROOTS and not _inside_thread_forall(op)


def _allocs_to_workgroup(forall: ir.Operation) -> None:
    """Buffers a block allocates for itself (an accumulator tile that the
    epilogue could not update in place) are shared by its threads: workgroup
    memory, like the promoted operand tiles."""
    body = forall.regions[0].blocks[0]
    for op in body.operations:
        op = op.operation
        if op.name == "memref.alloc" and ir.MemRefType(op.results[0].type).memory_space is None:
            _retype_to_workgroup(op.results[0])


def _retype_to_workgroup(value: ir.Value) -> None:
    """``value`` and the views derived from it, in workgroup memory."""
    t = ir.MemRefType(value.type)
    space = ir.Attribute.parse(WORKGROUP)
    value.set_type(ir.MemRefType.get(t.shape, t.element_type, t.layout, space))
    for use in value.uses:
        owner = use.owner.operation
        if owner.name in _VIEW_OPS:
            _retype_to_workgroup(owner.results[0])


def _thread_ops(block: _Block) -> list[ir.Operation]:
    """The block's linalg ops not yet in a thread forall (after promotion)."""
    return ops_matching(
        block.forall,
        lambda o: _is_linalg(o) and not _inside_thread_forall(o) and not GPU_TAG.has(o),
    )


def _element_bytes(value: ir.Value) -> int:
    width = ir.MemRefType(value.type).element_type.width
    return max(1, width // 8)


def _copy_vector(op: ir.Operation) -> int:
    """Elements per thread along the inner dim of a copy: a 16-byte vector
    when both sides are provably aligned for it, else 1."""
    if op.name != "linalg.copy":
        return 1
    source, target = op.operands
    elements = VECTOR_BYTES // _element_bytes(source)
    bound = _bound_shape(target)
    if bound is None or bound[-1] % elements or _static_shape(source) is None:
        return 1
    if aligned_vector(source, elements) and aligned_vector(target, elements):
        return elements
    return 1


def _tile_rest(block: _Block, module: ir.Operation, problems: list[str]) -> None:
    script = ""
    for index, op in enumerate(_thread_ops(block)):
        counts = _parallel_counts(op, block.threads, _copy_vector(op))
        if counts is None:  # no parallel loop: one thread does it all
            _wrap_in(op, "thread")
            continue
        var = f"%o{index}"
        script += _match(var, _tag(op, f"{block.name}.o{index}")) + _thread_tile(var, counts)
    if script and (failure := apply_script(module, script)):
        problems.append(f"threads of block {block.name}: {failure}")


def _map_block(block: _Block, module: ir.Operation, problems: list[str]) -> None:
    roots = ops_matching(block.forall, _is_root)
    _allocs_to_workgroup(block.forall)
    if len(roots) == 1 and GPU_THREADS.has(block.forall):
        _ensure_subviews(roots[0])
        if failure := apply_script(module, _promote_root(block, roots[0])):
            problems.append(f"{describe(roots[0])}: {failure}")
            return
    else:
        block.threads = THREADS
    _tile_rest(block, module, problems)
    _vectorize_threads(block, module, problems)
    GPU_BLOCK_THREADS.set(block.forall, block.threads)


def _vector_ready(op: ir.Operation) -> bool:
    """A thread's copy or contraction tile that may become vector code: static
    shapes, and each operand's rows aligned for vectors as long as they are
    (the kernels claim vector-size alignment: lowerline.passes.gpu.alignment)."""
    if op.name not in ("linalg.copy", *_ROOTS[:2]):
        return False
    for value in op.operands:
        shape = _static_shape(value)
        if shape is None or not shape:
            return False
        inner = shape[-1]
        if inner & (inner - 1) or inner * _element_bytes(value) > 4 * VECTOR_BYTES:
            return False
        if inner > 1 and not aligned_vector(value, inner):
            return False
    return True


def _vectorize_threads(block: _Block, module: ir.Operation, problems: list[str]) -> None:
    ops = ops_matching(block.forall, lambda o: _inside_thread_forall(o) and _vector_ready(o))
    script = ""
    for index, op in enumerate(ops):
        var = f"%v{index}"
        script += _match(var, _tag(op, f"{block.name}.v{index}"))
        # Contractions as vector.contract (FMA outer products), not the
        # broadcast + reduce of plain vectorization.
        named = " {create_named_contraction}" if op.name in _ROOTS else ""
        script += f"  transform.structured.vectorize {var}{named} : {ANY}\n"
    if script and (failure := apply_script(module, script)):
        problems.append(f"vectors of block {block.name}: {failure}")


def _single_forall(kind: str) -> ir.Operation:
    mapping = ir.Attribute.parse(f"[#gpu.{kind}<linear_dim_0>]")
    forall = scf.ForallOp([0], [1], [1], mapping=mapping)
    with ir.InsertionPoint(forall.body):
        scf.InParallelOp()
    return forall.operation


def _wrap_in(op: ir.Operation, kind: str) -> ir.Operation:
    """``op`` inside a one-iteration forall mapped to one ``kind`` (block, thread)."""
    with op.location, ir.InsertionPoint(op):
        forall = _single_forall(kind)
    op.move_before(forall.regions[0].blocks[0].operations[0])
    return forall


def _wrap_single(op: ir.Operation) -> None:
    """``op`` (no parallel loop: a full reduction) in one block of one thread."""
    outer = _wrap_in(_wrap_in(op, "thread"), "block")
    GPU_BLOCK_THREADS.set(outer, 1)


def _point_script(op: ir.Operation, name: str) -> str | None:
    """Block forall of up to THREADS points, then one point per thread."""
    shape = iteration_shape(op)
    kinds = iterator_kinds(op)
    if shape is None or "parallel" not in kinds:
        return None
    block = point_tiles(shape, kinds)
    loops = sum(1 for b in block if b)
    var = "%p"
    return (
        _match(var, _tag(op, name))
        + f"  %pb, %pf = transform.structured.tile_using_forall {var} tile_sizes "
        f"{_ints(block)} (mapping = {_mapping('block', loops)}) : ({ANY}) -> ({ANY}, {ANY})\n"
        + _thread_tile("%pb", block)
    )


def _threads_of(op: ir.Operation) -> int:
    shape, kinds = iteration_shape(op), iterator_kinds(op)
    assert shape is not None, "only ops with static shapes get a point script"
    count = 1
    for b in point_tiles(shape, kinds):
        count *= max(b, 1)
    return count


def _map_host_op(op: ir.Operation, name: str, module: ir.Operation, problems: list[str]) -> None:
    script = _point_script(op, name)
    if script is None:
        if iteration_shape(op) is None:
            problems.append(f"{describe(op)}: dynamic shapes are not mapped to the GPU")
        else:
            _wrap_single(op)
        return
    threads = _threads_of(op)
    if failure := apply_script(module, script):
        problems.append(f"{describe(op)}: {failure}")
        return
    for forall in block_foralls(module):
        if not GPU_BLOCK_THREADS.has(forall):
            GPU_BLOCK_THREADS.set(forall, threads)


def block_foralls(module: ir.Operation) -> list[ir.Operation]:
    """The block foralls at the top level of every function."""
    found = []
    for func in defined_functions(module):
        body = func.regions[0].blocks[0].operations
        found += [o.operation for o in body if _is_block_forall(o.operation)]
    return found


def _host_problems(func: ir.Operation) -> list[str]:
    bad = []
    for op in func.regions[0].blocks[0].operations:
        op = op.operation
        if op.name not in _HOST_OPS and not _is_linalg(op):
            bad.append(f"{op.name} at {op.location}: runs on the host on device memory")
    return bad


@dataclass(frozen=True)
class GpuDistribute(Pass):
    flag = "lowerline-gpu-distribute"
    summary = "Map linalg ops on buffers to GPU blocks and threads, operands in shared memory"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        problems: list[str] = []
        funcs = defined_functions(op)
        for func in funcs:
            copies_to_linalg(func, strided_only=False)
        counter = 0
        for forall in block_foralls(op):
            _map_block(_Block(forall, f"b{counter}"), op, problems)
            counter += 1
        for func in funcs:
            host = [o.operation for o in func.regions[0].blocks[0].operations]
            for index, linalg_op in enumerate(o for o in host if _is_linalg(o)):
                _map_host_op(linalg_op, f"h{counter}.{index}", op, problems)
            problems += _host_problems(func)
        # i8 tiles as 4-byte dot products (dp4a in the kernels), before the
        # rest of the contractions become outer products.
        byte_dot_products(op)
        if failure := apply_script(op, LOWERING_IN_PLACE):
            problems.append(f"lowering the vector code: {failure}")
        _strip(op)
        if problems:
            op.location.emit_error(
                "cannot map to GPU blocks and threads:\n  " + "\n  ".join(problems)
            )
            raise PassFailed()


def _strip(module: ir.Operation) -> None:
    def visit(op: ir.Operation) -> ir.WalkResult:
        GPU_TAG.remove(op)
        GPU_THREADS.remove(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
