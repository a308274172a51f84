"""In-compiler int8 quantization: ``lowerline.compile(model, x, quantize=Int8(...))``.

A float model is exported, calibrated on the given batches (observers on
the exported graph) and rewritten into the QDQ graph torchao's PT2E flow
would produce (``calibrate``); that graph then compiles like any PT2E model,
so lowerline's graph-stage folds turn its layers into integer kernels.
``report`` checks each layer's compiled kernel against its QDQ float
reference and the whole model against the float one
(``CompiledModule.quant_report()``).

Runs in the user's process: it imports torch and lowerline's frontend
helper for the ``quantized_decomposed`` ops, never MLIR, the driver or the
API (the API hands ``report`` the compile function it needs).
"""

from lowerline.quant.config import Int8

__all__ = ["Int8"]
