"""A GPU thread's i8 x i8 -> i32 contraction tile as four-byte dot products.

``lowerline-gpu-distribute`` vectorizes each thread's matmul tile into a
``vector.contract`` of ``A: vector<M x K x i8>`` and ``B: vector<K x N x i8>``
into ``vector<M x N x i32>`` (lowerline-fold-qdq-matmul's integer matmuls).
Upstream lowers it to outer products: per k, each byte of A sign-extended
and broadcast, times N sign-extended bytes of B: ``M * N * K`` multiplies
and adds on i32. PTX has ``dp4a`` (sm_61 and later): the four products of
two 4-byte words added to an i32 in one instruction.

Here each output element becomes a chain of ``K / 4`` steps of

    acc = vector.reduction <add>, muli(extsi(a4), extsi(b4)), acc

with ``a4 = A[m, 4g:4g+4]`` and ``b4 = B[4g:4g+4, n]`` (B's tile transposed
once, in registers). That form is target-neutral: the mapped IR still runs
on the CPU (``cpu_emulation``), and ``lowerline-gpu-dp4a`` turns each step
into ``nvvm.dot.accumulate.4way`` in the kernels. Upstream's ``dot``
contraction lowering gives one K-wide reduction per element, which NVPTX
does not form ``dp4a`` from.

Only unmasked tiles with the matmul maps and a multiple of 4 in k are
rewritten; others keep the outer products.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, vector

from lowerline.passes.support.matmul_tiles import is_matmul_tile, matrix_of
from lowerline.pipeline.pass_api import ops_matching

DOT_BYTES = 4


def _element(value: ir.Value) -> str:
    return str(ir.VectorType(value.type).element_type)


def is_byte_dot_tile(op: ir.Operation) -> bool:
    """An unmasked ``vector.contract`` (m, k) x (k, n) -> (m, n) of i8 into
    i32 with k a multiple of 4."""
    if op.name != "vector.contract" or op.parent.name == "vector.mask":
        return False
    if not is_matmul_tile(op):
        return False
    types = tuple(_element(v) for v in op.operands)
    k = ir.VectorType(op.operands[0].type).shape[-1]
    return types == ("i8", "i8", "i32") and k % DOT_BYTES == 0


def _dot_step(a4: ir.Value, b4: ir.Value, acc: ir.Value) -> ir.Value:
    i32x4 = ir.VectorType.get([DOT_BYTES], ir.IntegerType.get_signless(32))
    products = arith.muli(arith.extsi(i32x4, a4), arith.extsi(i32x4, b4))
    return vector.reduction(acc.type, vector.CombiningKind.ADD, products, acc=acc)


def _rows(matrix: ir.Value) -> list[ir.Value]:
    return [vector.extract(matrix, [], [r]) for r in range(ir.VectorType(matrix.type).shape[0])]


def _bytes(row: ir.Value, group: int) -> ir.Value:
    return vector.extract_strided_slice(
        ir.VectorType.get([DOT_BYTES], ir.VectorType(row.type).element_type),
        row,
        [group * DOT_BYTES],
        [DOT_BYTES],
        [1],
    )


def _rewrite(contract: ir.Operation) -> None:
    with ir.InsertionPoint(contract), contract.location:
        lhs, rhs, acc = (matrix_of(v) for v in contract.operands)
        result = _dot_chains(lhs, rhs, acc)
        if result.type != contract.results[0].type:
            result = vector.shape_cast(contract.results[0].type, result)
    contract.results[0].replace_all_uses_with(result)
    contract.erase()


def _dot_chains(lhs: ir.Value, rhs: ir.Value, acc: ir.Value) -> ir.Value:
    """``acc + lhs @ rhs`` (i8 x i8 -> i32 matrices) as four-byte dot steps."""
    m, k = ir.VectorType(lhs.type).shape
    n = ir.VectorType(rhs.type).shape[1]
    b_t = vector.transpose(
        ir.VectorType.get([n, k], ir.VectorType(rhs.type).element_type), rhs, [1, 0]
    )
    a_rows, b_rows = _rows(lhs), _rows(b_t)
    groups = range(k // DOT_BYTES)
    a_bytes = [[_bytes(row, g) for g in groups] for row in a_rows]
    b_bytes = [[_bytes(row, g) for g in groups] for row in b_rows]
    sums = []
    for i in range(m):
        for j in range(n):
            total = vector.extract(acc, [], [i, j])
            for g in groups:
                total = _dot_step(a_bytes[i][g], b_bytes[j][g], total)
            sums.append(total)
    return vector.from_elements(acc.type, sums)


def byte_dot_products(root: ir.Operation) -> int:
    """Rewrites every byte-dot-shaped contraction tile under ``root``; returns
    how many."""
    tiles = ops_matching(root, is_byte_dot_tile)
    for contract in tiles:
        _rewrite(contract)
    return len(tiles)
