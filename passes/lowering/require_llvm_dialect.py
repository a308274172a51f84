"""``lowerline-require-llvm-dialect``: fail, naming the op, where an op was
not lowered to the LLVM dialect.

Why: ``convert-to-llvm`` and the other ``convert-*-to-llvm`` passes are
partial conversions: an op without a lowering (``complex.exp`` before
``convert-complex-to-standard`` ran, a ``tensor`` op left by a stage) stays
in the IR and the pipeline succeeds. The failure then comes later and far
from its cause: ``mlir-translate`` refuses the module, and MLIR's
ExecutionEngine says only "Failure while creating the ExecutionEngine".
Upstream has no pass that checks a module is all LLVM dialect.

Before / after: the IR is unchanged; each op name outside ``allowed`` gets
one error at its first location::

    %e = complex.exp %z : complex<f32>
        ==> error: 'complex.exp' (1 in the module) was not lowered to the LLVM
            dialect: the llvm stage has no lowering for it
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mlir import ir

from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, PassFailed, ops_matching


def _allowed(name: str, allowed: list[str]) -> bool:
    return any(name.startswith(prefix + ".") for prefix in allowed)


@dataclass(frozen=True)
class RequireLlvmDialect(Pass):
    flag = "lowerline-require-llvm-dialect"
    summary = "Fail, naming the op, where an op is not in the LLVM dialect"
    anchor = "builtin.module"

    # OpenMP ops on LLVM types, and the LLVM intrinsics of arm_neon (the
    # sdot of lowerline.passes.tiling.int8_dot), are translated to LLVM IR
    # as they are.
    allowed: str = opt(
        "builtin,llvm,omp,arm_neon.intr",
        "dialects, or prefixes of op names (dialect.group), allowed to remain, comma-separated",
    )

    def run(self, op: ir.Operation) -> None:
        allowed = self.allowed.split(",")
        left = ops_matching(op, lambda o: not _allowed(o.name, allowed))
        if not left:
            return
        counts = Counter(o.name for o in left)
        reported: set[str] = set()
        for bad in left:
            if bad.name in reported:
                continue
            reported.add(bad.name)
            bad.location.emit_error(
                f"'{bad.name}' ({counts[bad.name]} in the module) was not lowered to the "
                "LLVM dialect: the llvm stage has no lowering for it"
            )
        raise PassFailed()
