"""``lowerline-gpu-host-buffers``: the host function's buffers on the device,
in two buffers the caller allocates once.

After mapping, the host function only allocates, addresses and launches; the
kernels read and write its buffers, so those must be device memory. Copying
every weight in and allocating every buffer at each call cost about 900 of
the 1010 us of a 256x1024x1024 linear on an H100 (bench/gpu-h100.md), so
every device buffer of an entry function becomes a view of one of two
``memref<?xi8>`` arguments appended after its out-parameters:

- **weights**: the constants (``memref.get_global``), each at a 256-byte
  aligned offset. A new function ``@<name>_weights(%weights)`` copies every
  constant in; the caller runs it once, after allocating the buffer, and
  shares the buffer between calls (kernels only read it);
- **scratch**: a device copy of each argument (inputs copied in at entry,
  the trailing ``lowerline.num_results`` out-parameters copied back before
  returning) and every host ``memref.alloc``, placed by
  ``lowerline-plan-arena``'s planner: live ranges in the entry block, then
  first-fit offsets, so buffers whose live ranges do not overlap share bytes
  (a call's copies and kernels run in order on one stream). A call uses it
  whole: calls at the same time need one each.

Offsets are multiples of 256 bytes, the alignment of ``cuMemAlloc`` that
``lowerline.passes.gpu.alignment`` counts on for ``gpu.alloc`` buffers. The
function gets ``lowerline.gpu_buffers = [weights bytes, scratch bytes]``.
An allocation the planner leaves (one that escapes) stays a ``gpu.alloc``
freed at the end, at every call. A non-shared ``memref.alloc`` inside a
launch (a thread's temporary) becomes a ``memref.alloca`` (kernels cannot
call malloc).

The ops are synchronous here; ``gpu-async-region`` (upstream) then chains
them on one stream, as ``gpu-to-llvm`` wants. Upstream has the ops but no
pass moving a function's buffers to the device, and no static memory
planner (see ``lowerline-plan-arena``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, gpu, memref

from lowerline.passes.bufferization.plan_arena import (
    append_arena,
    element_bytes,
    live_buffers,
    place,
    view_in_arena,
)
from lowerline.pipeline import protocol
from lowerline.pipeline.pass_api import Pass, PassFailed, defined_functions, ops_matching
from lowerline.pipeline.protocol import NUM_RESULTS

# cuMemAlloc's alignment: what kernels may assume of a device buffer's base.
DEVICE_ALIGNMENT = 256


class _Unsupported(Exception):
    pass


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _check_static(value: ir.Value, what: str) -> None:
    if not ir.MemRefType(value.type).has_static_shape:
        raise _Unsupported(f"{what} of dynamic shape {value.type}")


def _bytes(t: ir.MemRefType, what: str) -> int:
    size = element_bytes(t.element_type)
    if size is None:
        raise _Unsupported(f"{what} of element type {t.element_type}")
    for dim in t.shape:
        size *= dim
    return size


def _replace_uses_except(value: ir.Value, new: ir.Value, keep: ir.Operation | None) -> None:
    for use in list(value.uses):
        if keep is None or use.owner != keep:
            use.owner.operands[use.operand_number] = new


def _copy_arguments(func_op: ir.Operation, entry: ir.Block) -> None:
    """A buffer per memref argument, used in its place: inputs copied in at
    entry, out-parameters copied back at each return. The buffers are
    ``memref.alloc``s freed at the returns, for the planner to place."""
    results = NUM_RESULTS.get(func_op, 0)
    args = [a for a in entry.arguments if isinstance(a.type, ir.MemRefType)]
    outputs = args[len(args) - results :] if results else []
    returns = ops_matching(func_op, lambda o: o.name == "func.return")
    first = entry.operations[0]
    for arg in args:
        _check_static(arg, f"argument {arg.arg_number}")
        is_output = any(arg == o for o in outputs)
        with ir.InsertionPoint(first), func_op.location:
            buffer = memref.AllocOp(arg.type, [], []).result
            copy_in = None if is_output else gpu.MemcpyOp(None, [], buffer, arg).operation
        _replace_uses_except(arg, buffer, copy_in)
        for ret in returns:
            with ir.InsertionPoint(ret), func_op.location:
                if is_output:
                    gpu.MemcpyOp(None, [], arg, buffer)
                memref.DeallocOp(buffer)


def _plan_scratch(func_op: ir.Operation) -> int:
    """The entry block's allocations as views of a trailing scratch argument;
    its size."""
    buffers = live_buffers(func_op)
    for buffer in buffers:
        buffer.alignment = max(buffer.alignment, DEVICE_ALIGNMENT)
    size = place(buffers)
    scratch = append_arena(func_op)
    for buffer in buffers:
        view_in_arena(buffer, scratch)
    return _round_up(size, DEVICE_ALIGNMENT)


def _allocs_left_per_call(entry: ir.Block) -> None:
    """What the planner left: allocated on the device at every call."""
    for op in [o.operation for o in entry.operations]:
        if op.name == "memref.alloc":
            _check_static(op.results[0], "a buffer")
            with ir.InsertionPoint(op), op.location:
                buffer = gpu.AllocOp(op.results[0].type, None, [], [], []).result
            op.results[0].replace_all_uses_with(buffer)
            op.erase()
        elif op.name == "memref.dealloc":
            with ir.InsertionPoint(op), op.location:
                gpu.DeallocOp(None, [], op.operands[0])
            op.erase()


@dataclass(frozen=True)
class _Weight:
    name: str  # the memref.global's symbol
    type: ir.MemRefType
    offset: int  # in the weights buffer


def _weights_to_views(entry: ir.Block, weights: ir.Value) -> tuple[list[_Weight], int]:
    """Each ``memref.get_global`` of the entry block -> a view of ``weights``
    (one place per constant); the constants placed and the buffer's size."""
    placed: dict[str, _Weight] = {}
    size = 0
    for op in [o.operation for o in entry.operations]:
        if op.name != "memref.get_global":
            continue
        value = op.results[0]
        name = ir.FlatSymbolRefAttr(op.attributes["name"]).value
        _check_static(value, f"constant {name}")
        if name not in placed:
            t = ir.MemRefType(value.type)
            placed[name] = _Weight(name, t, size)
            size = _round_up(size + _bytes(t, f"constant {name}"), DEVICE_ALIGNMENT)
        with ir.InsertionPoint(op), op.location:
            offset = arith.constant(ir.IndexType.get(), placed[name].offset)
            view = memref.view(value.type, weights, offset, [])
        value.replace_all_uses_with(view)
        op.erase()
    return list(placed.values()), size


def _upload_function(func_op: ir.Operation, name: str, weights: list[_Weight]) -> None:
    """``@name(%weights)``, after ``func_op``: every constant copied to its view."""
    byte_buffer = ir.MemRefType.get(
        [ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8)
    )
    with ir.InsertionPoint.after(func_op), func_op.location:
        upload = func.FuncOp(name, ir.FunctionType.get([byte_buffer], []))
        block = upload.add_entry_block()
    with ir.InsertionPoint(block), func_op.location:
        for weight in weights:
            host = memref.get_global(weight.type, weight.name)
            offset = arith.constant(ir.IndexType.get(), weight.offset)
            device = memref.view(weight.type, block.arguments[0], offset, [])
            gpu.MemcpyOp(None, [], device, host)
        func.ReturnOp([])


def _kernel_temporaries(func_op: ir.Operation) -> None:
    def private(op: ir.Operation) -> bool:
        if op.name != "memref.alloc" or not _in_launch(op):
            return False
        return ir.MemRefType(op.results[0].type).memory_space is None

    for alloc in ops_matching(func_op, private):
        with ir.InsertionPoint(alloc), alloc.location:
            stack = memref.AllocaOp(alloc.results[0].type, [], []).result
        for use in list(alloc.results[0].uses):
            if use.owner.operation.name == "memref.dealloc":
                use.owner.erase()
        alloc.results[0].replace_all_uses_with(stack)
        alloc.erase()


def _in_launch(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name == "gpu.launch":
            return True
        parent = parent.parent
    return False


def _called(module: ir.Operation, name: str) -> bool:
    calls = ops_matching(module, lambda o: o.name == "func.call")
    return any(ir.FlatSymbolRefAttr(c.attributes["callee"]).value == name for c in calls)


def _symbol(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


@dataclass(frozen=True)
class GpuHostBuffers(Pass):
    flag = "lowerline-gpu-host-buffers"
    summary = (
        "Buffers of functions that launch kernels -> views of two device buffers the caller "
        "allocates once (weights, scratch), and copies"
    )
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        names = {_symbol(f) for f in defined_functions(op)}
        for func_op in defined_functions(op):
            if protocol.GPU_BUFFERS.has(func_op):
                continue
            if not ops_matching(func_op, lambda o: o.name == "gpu.launch"):
                continue
            try:
                self._place(op, func_op, names)
            except _Unsupported as err:
                func_op.location.emit_error(f"cannot place on the GPU: {err}")
                raise PassFailed() from None

    def _place(self, module: ir.Operation, func_op: ir.Operation, names: set[str]) -> None:
        name = _symbol(func_op)
        upload = name + protocol.WEIGHTS_SUFFIX
        if _called(module, name):
            raise _Unsupported(f"@{name} is called: only an entry function takes device buffers")
        if upload in names:
            raise _Unsupported(f"@{upload}, the name of its weights' upload, is taken")
        entry = func_op.regions[0].blocks[0]
        _kernel_temporaries(func_op)
        _copy_arguments(func_op, entry)
        weights_arg = append_arena(func_op)
        weights, weights_bytes = _weights_to_views(entry, weights_arg)
        scratch_bytes = _plan_scratch(func_op)
        _allocs_left_per_call(entry)
        _upload_function(func_op, upload, weights)
        protocol.GPU_BUFFERS.set(func_op, [weights_bytes, scratch_bytes])
