"""Graph-stage passes: rewrites of linalg on tensors before tiling.

``qdq_ops`` holds no pass: the quantize/dequantize builders the QDQ passes
share (their matchers live in ``fold_qdq_matmul``).
"""
