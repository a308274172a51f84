"""``lowerline-widen-i1-memrefs``: store booleans as bytes before LLVM lowering.

Why: in LLVM 22, ``finalize-memref-to-llvm`` asserts (and so aborts the
process) on a ``memref.store`` into, or a ``memref.load`` from, a memref of
``i1`` (``StoreOpLowering`` / ``LoadOpLowering``: "integralElementType.getWidth()
>= 8"). Bool tensors reach memrefs of i1 in
real models (attention masks in ``TransformerEncoderLayer``, comparisons).
Upstream has no production pass that changes the element type of memrefs: its
narrow-type emulation (``test-emulate-narrow-int``) is a test pass and packs
sub-byte values into wider words, which would change the memory layout. One
byte per boolean is also what PyTorch uses, so widened buffers keep the ABI of
torch's bool tensors.

Before / after::

    %m = memref.alloc() : memref<4xi1>          %m = memref.alloc() : memref<4xi8>
    memref.store %b, %m[%i] : memref<4xi1>      %w = arith.extui %b : i1 to i8
                                                memref.store %w, %m[%i] : memref<4xi8>
    %v = memref.load %m[%i] : memref<4xi1>      %l = memref.load %m[%i] : memref<4xi8>
                                                %v = arith.trunci %l : i8 to i1

Every value of type ``memref<...xi1>`` in scope is retyped to ``i8``; loads
and stores (scalar and vector) get the casts. On ``builtin.module`` this also
covers function signatures, calls and ``memref.global``s. On a nested op (for
example ``func.func``) only what is local can change: a signature, call or
global with i1 memrefs is reported as an error, since changing it would touch
IR outside the op. Any other op using an i1 memref is reported too. All errors
are found before anything is rewritten, so a failing run leaves the IR as it
was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith

from lowerline.passes.support.memref_views import VIEW_OPS
from lowerline.pipeline.pass_api import Pass, PassFailed

# Ops whose meaning does not depend on the element type: retyping their
# memref operands and results is all they need.
_RETYPE_ONLY = VIEW_OPS | frozenset(
    {
        "memref.alloc",
        "memref.alloca",
        "memref.dealloc",
        "memref.copy",
        "memref.dim",
        "memref.rank",
        "memref.extract_aligned_pointer_as_index",
        "memref.realloc",
        "memref.get_global",
        "func.return",
        "func.call",
        "scf.for",
        "scf.if",
        "scf.while",
        "scf.yield",
        "scf.condition",
        "scf.execute_region",
        "scf.forall",
        "scf.parallel",
        "scf.in_parallel",
        "cf.br",
        "cf.cond_br",
        "cf.switch",
    }
)
# Ops that read booleans: (name, operand index of a data value written, or None).
# The data operand is cast i1 -> i8; an i1 result is cast back i8 -> i1.
_WRITES = {
    "memref.store": 0,
    "vector.store": 0,
    "vector.transfer_write": 0,
    "vector.maskedstore": -1,
}
_READS = {
    "memref.load": None,
    "vector.load": None,
    "vector.transfer_read": "padding",
    "vector.maskedload": -1,
}
# Ops that may only appear under module scope, since they reach outside a function.
_MODULE_SCOPE = frozenset({"func.call", "memref.get_global"})


def _i8_like(t: ir.Type) -> ir.Type | None:
    """The i8 version of an i1 memref/vector/scalar type, or None if ``t`` holds no i1."""
    i1 = ir.IntegerType.get_signless(1)
    i8 = ir.IntegerType.get_signless(8)
    if isinstance(t, ir.MemRefType):
        if t.element_type == i1:
            return ir.MemRefType.get(t.shape, i8, t.layout, t.memory_space)
    elif isinstance(t, ir.UnrankedMemRefType):
        if t.element_type == i1:
            return ir.UnrankedMemRefType.get(i8, t.memory_space)
    elif isinstance(t, ir.VectorType):
        if t.element_type == i1:
            return ir.VectorType.get(t.shape, i8, scalable=t.scalable_dims)
    elif t == i1:
        return i8
    return None


def _is_i1_memref(t: ir.Type) -> bool:
    return isinstance(t, ir.MemRefType | ir.UnrankedMemRefType) and _i8_like(t) is not None


def _widen_memref(t: ir.Type) -> ir.Type:
    """``t`` with i1 memrefs widened to i8; any other type (an i1 scalar too) as is."""
    return _i8_like(t) if _is_i1_memref(t) else t


@dataclass
class _Plan:
    values: list[ir.Value] = field(default_factory=list)
    accesses: list[ir.Operation] = field(default_factory=list)
    functions: list[ir.Operation] = field(default_factory=list)
    globals: list[ir.Operation] = field(default_factory=list)
    problems: list[tuple[ir.Operation, str]] = field(default_factory=list)


def _function_type_has_i1(func: ir.Operation) -> bool:
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    return any(_is_i1_memref(t) for t in [*ftype.inputs, *ftype.results])


def _global_has_i1(op: ir.Operation) -> bool:
    return _is_i1_memref(ir.TypeAttr(op.attributes["type"]).value)


@dataclass(frozen=True)
class WidenI1Memrefs(Pass):
    flag = "lowerline-widen-i1-memrefs"
    summary = "Store i1 memrefs as i8 (finalize-memref-to-llvm aborts on i1 loads and stores)"
    anchor = None

    def run(self, op: ir.Operation) -> None:
        plan = self._analyze(op)
        if plan.problems:
            for bad_op, message in plan.problems:
                bad_op.location.emit_error(message)
            raise PassFailed()
        self._rewrite(plan)

    # -- analysis: find everything to change, or every reason not to ----------

    def _analyze(self, scope: ir.Operation) -> _Plan:
        plan = _Plan()
        module_scope = scope.name == "builtin.module"
        self._scope_signature(scope, module_scope, plan)

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op != scope:
                self._visit(op, module_scope, plan)
            return ir.WalkResult.ADVANCE

        scope.walk(visit, ir.WalkOrder.PRE_ORDER)
        return plan

    def _scope_signature(self, scope: ir.Operation, module_scope: bool, plan: _Plan) -> None:
        if module_scope or scope.name != "func.func":
            return
        if _function_type_has_i1(scope):
            plan.problems.append(
                (
                    scope,
                    "function signature has i1 memrefs; run "
                    f"{self.flag} on the enclosing builtin.module to widen it",
                )
            )
        plan.values.extend(self._block_args(scope))

    def _block_args(self, op: ir.Operation) -> list[ir.Value]:
        return [
            arg
            for region in op.regions
            for block in region.blocks
            for arg in block.arguments
            if _is_i1_memref(arg.type)
        ]

    def _visit(self, op: ir.Operation, module_scope: bool, plan: _Plan) -> None:
        if op.name == "func.func" and _function_type_has_i1(op):
            plan.functions.append(op)
        if op.name == "memref.global" and _global_has_i1(op):
            if not module_scope:
                plan.problems.append((op, "memref.global of i1 needs module scope"))
            plan.globals.append(op)
        plan.values.extend(self._block_args(op))
        results = [r for r in op.results if _is_i1_memref(r.type)]
        touches = bool(results) or any(_is_i1_memref(v.type) for v in op.operands)
        if not touches:
            return
        plan.values.extend(results)
        if op.name in _WRITES or op.name in _READS:
            plan.accesses.append(op)
        elif op.name not in _RETYPE_ONLY:
            plan.problems.append(
                (op, f"'{op.name}' on an i1 memref is not supported by {self.flag}")
            )
        elif op.name in _MODULE_SCOPE and not module_scope:
            plan.problems.append(
                (op, f"'{op.name}' with i1 memrefs needs {self.flag} on the builtin.module")
            )

    # -- rewrite: cannot fail once the analysis passed ------------------------

    def _rewrite(self, plan: _Plan) -> None:
        for value in plan.values:
            value.set_type(_i8_like(value.type))
        for func in plan.functions:
            ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
            widened = ir.FunctionType.get(
                [_widen_memref(t) for t in ftype.inputs], [_widen_memref(t) for t in ftype.results]
            )
            func.attributes["function_type"] = ir.TypeAttr.get(widened)
        for glob in plan.globals:
            self._widen_global(glob)
        for access in plan.accesses:
            self._widen_access(access)

    def _widen_global(self, glob: ir.Operation) -> None:
        memref_type = ir.TypeAttr(glob.attributes["type"]).value
        widened = _i8_like(memref_type)
        assert widened is not None, "the plan lists i1 globals only"
        glob.attributes["type"] = ir.TypeAttr.get(widened)
        if "initial_value" not in glob.attributes:
            return
        init = glob.attributes["initial_value"]
        if not isinstance(init, ir.DenseIntElementsAttr):
            return  # `uninitialized` (a unit attr) needs no change
        dense = init
        tensor_type = ir.RankedTensorType.get(widened.shape, ir.IntegerType.get_signless(8))
        values = [
            ir.IntegerAttr.get(ir.IntegerType.get_signless(8), int(dense[i]) & 1)
            for i in range(len(dense))
        ]
        glob.attributes["initial_value"] = ir.DenseElementsAttr.get(values, type=tensor_type)

    def _widen_access(self, op: ir.Operation) -> None:
        data_index = _WRITES.get(op.name, _READS.get(op.name))
        if data_index == "padding":
            data_index = next(
                i for i, v in enumerate(op.operands) if v.type == ir.IntegerType.get_signless(1)
            )
        if data_index is not None:
            value = op.operands[data_index]
            with ir.InsertionPoint(op), op.location:
                op.operands[data_index] = arith.extui(_i8_like(value.type), value)
        for result in op.results:
            narrow = result.type
            wide = _i8_like(narrow)
            if wide is None:
                continue
            result.set_type(wide)
            with ir.InsertionPoint(op), op.location:
                trunc = arith.TruncIOp(narrow, result)
            trunc.move_after(op)
            result.replace_all_uses_except(trunc.result, trunc.operation)
