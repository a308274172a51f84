"""What keeps a compiled module from running standalone: heap allocations and
stack allocations that grow with the tensors, found in its LLVM-dialect IR.

``lowerline.export`` promises a run path with no ``malloc`` and a bounded
stack: every intermediate buffer lives in the caller's workspace (the arena
of ``lowerline-plan-arena``). A buffer the plan could not place is still a
``memref.alloc``, lowered to a call of ``_mlir_memref_to_llvm_alloc`` (the
llvm stage uses the generic allocation functions); a ``memref.alloca`` is an
``llvm.alloca``. The compile worker runs ``problems`` on the final module of
an export and refuses the export when it finds any, naming the op's source
location, rather than ship code that mallocs behind the caller's back.
"""

from __future__ import annotations

from mlir import ir

# The functions heap allocations are lowered to (finalize-memref-to-llvm
# {use-generic-functions}), and the C ones in case code calls them directly.
HEAP_FUNCTIONS = frozenset(
    {
        "_mlir_memref_to_llvm_alloc",
        "_mlir_memref_to_llvm_aligned_alloc",
        "malloc",
        "calloc",
        "realloc",
        "aligned_alloc",
        "posix_memalign",
    }
)

# The largest stack allocation of constant size an export accepts: vector
# temporaries and memref descriptors are far smaller; a tensor-sized buffer
# on the stack of an edge device's thread is not.
MAX_ALLOCA_BYTES = 4096


def _callee(op: ir.Operation) -> str | None:
    if "callee" not in op.attributes:
        return None
    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value


def _constant_count(value: ir.Value) -> int | None:
    """The element count of an ``llvm.alloca`` when it is a constant."""
    owner = value.owner  # an OpView, an Operation, or a Block for an argument
    op = getattr(owner, "operation", None)
    if op is None or op.name != "llvm.mlir.constant":
        return None
    attr = op.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def _type_bytes(element: ir.Type) -> int | None:
    """Bytes of an alloca's element type; None for a type not sized here
    (structs: the descriptors the C wrappers spill, never tensor-sized)."""
    if isinstance(element, ir.IntegerType):
        return max(1, element.width // 8)
    if isinstance(element, ir.FloatType):
        return max(1, element.width // 8)
    if isinstance(element, ir.VectorType):
        inner = _type_bytes(element.element_type)
        return None if inner is None else inner * element.get_dim_size(0)
    return None


def _alloca_problem(op: ir.Operation) -> str | None:
    count = _constant_count(op.operands[0])
    if count is None:
        return f"a stack allocation of run-time size at {op.location}"
    element = ir.TypeAttr(op.attributes["elem_type"]).value
    size = _type_bytes(element)
    if size is not None and count * size > MAX_ALLOCA_BYTES:
        return (
            f"a stack allocation of {count * size} bytes ({count} x {element}) at "
            f"{op.location}, more than {MAX_ALLOCA_BYTES}"
        )
    return None


def problems(module: ir.Module) -> list[str]:
    """Why ``module`` (LLVM dialect) cannot run without malloc and with a
    stack bounded independently of the tensors' sizes; empty when it can."""
    found: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "llvm.call" and _callee(op) in HEAP_FUNCTIONS:
            found.append(f"a heap allocation ({_callee(op)}) at {op.location}")
        elif op.name == "llvm.alloca":
            problem = _alloca_problem(op)
            if problem:
                found.append(problem)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found
