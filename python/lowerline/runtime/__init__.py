"""Calling compiled code: memref descriptors over torch tensors and the ctypes
calls of a shared library (``native``), the CUDA driver (``cuda``), where the
native libraries live (``libraries``) and the C support code linked into every
library (``runtime_support.c``).

Never imports MLIR or any compiler part: a process that only runs compiled
code loads neither.
"""
