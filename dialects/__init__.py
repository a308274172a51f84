"""lowerline's own dialect, declared in IRDL (``lowerline.irdl.mlir``).

It holds what upstream MLIR lacks and the quantization work will build on: a
per-tensor quantization attribute (``#lowerline.per_tensor<scale,
zero_point>``) and ``lowerline.quantize`` / ``lowerline.dequantize`` ops;
and ``lowerline.tm_sort`` / ``tm_scatter`` / ``tm_scan``, the stand-ins for
torch-mlir's TMTensor ops that the import worker hands over and
``lowerline-lower-tm-tensor`` lowers.
IRDL verifies their operands, results and attribute values when IR is
parsed or verified; they are written in generic syntax (IRDL gives them no
custom assembly). The discardable attributes passes exchange are declared in
``lowerline.pipeline.protocol`` instead: IRDL does not see attributes on
upstream ops.

May import MLIR only.
"""

from __future__ import annotations

import os
from functools import cache

from mlir import ir
from mlir.dialects import irdl

# The TMTensor stand-ins' names, for the passes (the import worker, which
# may not load these bindings, spells them in its own table).
TM_SCAN = "lowerline.tm_scan"
TM_SCATTER = "lowerline.tm_scatter"
TM_SORT = "lowerline.tm_sort"

_SOURCE = os.path.join(os.path.dirname(__file__), "lowerline.irdl.mlir")


@cache
def _source() -> str:
    with open(_SOURCE, encoding="utf-8") as handle:
        return handle.read()


def load(context: ir.Context) -> None:
    """Register lowerline's dialect in ``context``; a no-op when it is there
    already (IRDL registering it twice aborts the process: measured)."""
    if context.is_registered_operation("lowerline.quantize"):
        return
    with context, ir.Location.unknown():
        module = ir.Module.parse(_source())
        irdl.load_dialects(module)
