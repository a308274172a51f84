"""IR helpers shared by passes of several groups: reading linalg ops
(``linalg_info``), constants (``ir_constants``), transform-dialect scripts
(``transform_scripts``), building elementwise arithmetic
(``elementwise_ir``), the memref ops that view a buffer (``memref_views``),
what the hand-written convolution kernels share (their constant filter,
vector rows, the fused elementwise epilogue: ``conv_epilogue``) and options
several passes declare alike (``pass_options``). No passes live here.
"""
