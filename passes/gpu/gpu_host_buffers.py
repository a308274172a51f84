"""``lowerline-gpu-host-buffers``: the host function's buffers on the device.

After mapping, the host function only allocates, addresses and launches; the
kernels read and write its buffers, so those must be device memory:

- arguments (host tensors the caller passed): a device copy is allocated at
  entry; inputs are copied in, outputs (the trailing out-parameters, counted
  by ``lowerline.num_results``) are copied back before returning;
- ``memref.alloc`` on the host -> ``gpu.alloc``, ``memref.dealloc`` ->
  ``gpu.dealloc``;
- constants (``memref.get_global``: weights) are copied to a device buffer
  at entry (every call: a per-module device cache is future work);
- a non-shared ``memref.alloc`` inside a launch (a thread's temporary)
  becomes a ``memref.alloca`` (kernels cannot call malloc).

The ops are synchronous here; ``gpu-async-region`` (upstream) then chains
them on one stream, as ``gpu-to-llvm`` wants. Upstream has the ops but no
pass moving a function's buffers to the device.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import gpu, memref

from lowerline.pipeline.pass_api import Pass, PassFailed, ops_matching
from lowerline.pipeline.protocol import NUM_RESULTS


def _device_copy(value: ir.Value, copy_in: bool) -> ir.Value:
    """A gpu.alloc like ``value`` (at the insertion point), filled from it."""
    buffer = gpu.AllocOp(value.type, None, [], [], []).result
    if copy_in:
        gpu.MemcpyOp(None, [], buffer, value)
    return buffer


def _replace_uses_except(value: ir.Value, new: ir.Value, keep: ir.Operation | None) -> None:
    for use in list(value.uses):
        if keep is None or use.owner != keep:
            use.owner.operands[use.operand_number] = new


def _check_static(value: ir.Value, what: str) -> None:
    if not ir.MemRefType(value.type).has_static_shape:
        raise _Unsupported(f"{what} of dynamic shape {value.type}")


class _Unsupported(Exception):
    pass


def _move_arguments(func: ir.Operation, entry: ir.Block, device: list[ir.Value]) -> None:
    results = NUM_RESULTS.get(func, 0)
    args = [a for a in entry.arguments if isinstance(a.type, ir.MemRefType)]
    outputs = args[len(args) - results :] if results else []
    returns = ops_matching(func, lambda o: o.name == "func.return")
    first = entry.operations[0]
    for arg in args:
        _check_static(arg, f"argument {arg.arg_number}")
        is_output = any(arg == o for o in outputs)
        with ir.InsertionPoint(first), func.location:
            buffer = _device_copy(arg, copy_in=not is_output)
        _replace_uses_except(arg, buffer, None if is_output else _copy_of(arg))
        device.append(buffer)
        if is_output:
            for ret in returns:
                with ir.InsertionPoint(ret), func.location:
                    gpu.MemcpyOp(None, [], arg, buffer)


def _move_globals(entry: ir.Block, device: list[ir.Value]) -> None:
    for op in [o.operation for o in entry.operations]:
        if op.name != "memref.get_global":
            continue
        value = op.results[0]
        _check_static(value, f"constant {op.attributes['name']}")
        with ir.InsertionPoint.after(op), op.location:
            buffer = _device_copy(value, copy_in=True)
        _replace_uses_except(value, buffer, _copy_of(value))
        device.append(buffer)


def _copy_of(value: ir.Value) -> ir.Operation:
    return next(u.owner for u in value.uses if u.owner.operation.name == "gpu.memcpy")


def _move_allocs(entry: ir.Block) -> None:
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


def _kernel_temporaries(func: ir.Operation) -> None:
    def private(op: ir.Operation) -> bool:
        if op.name != "memref.alloc" or not _in_launch(op):
            return False
        return ir.MemRefType(op.results[0].type).memory_space is None

    for alloc in ops_matching(func, private):
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


def _free_at_return(func: ir.Operation, device: list[ir.Value]) -> None:
    for ret in ops_matching(func, lambda o: o.name == "func.return"):
        with ir.InsertionPoint(ret), func.location:
            for buffer in device:
                gpu.DeallocOp(None, [], buffer)


@dataclass(frozen=True)
class GpuHostBuffers(Pass):
    flag = "lowerline-gpu-host-buffers"
    summary = "Host buffers of functions that launch kernels -> device buffers and copies"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        if not ops_matching(op, lambda o: o.name == "gpu.launch"):
            return
        entry = op.regions[0].blocks[0]
        device: list[ir.Value] = []
        try:
            _kernel_temporaries(op)
            _move_allocs(entry)
            _move_globals(entry, device)
            _move_arguments(op, entry, device)
        except _Unsupported as err:
            op.location.emit_error(f"cannot place on the GPU: {err}")
            raise PassFailed() from None
        _free_at_return(op, device)
