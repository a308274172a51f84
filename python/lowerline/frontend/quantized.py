"""PT2E quantized graphs: the ``quantized_decomposed`` ops.

torchao's (and torch.ao's) ``convert_pt2e`` leaves quantize/dequantize pairs
as ``quantized_decomposed.{quantize,dequantize}_per_{tensor,channel}`` calls
around float ops. Those ops live in a library that torch registers only when
``torch.ao.quantization.fx._decomposed`` is imported: the import worker must
do that before it loads a program holding them.
"""

from __future__ import annotations


def register_ops() -> None:
    """Define the ``quantized_decomposed`` ops in this process (idempotent)."""
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers on import)
