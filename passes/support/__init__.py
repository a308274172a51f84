"""IR helpers shared by passes of several groups: reading linalg ops
(``linalg_info``), constants (``ir_constants``), transform-dialect scripts
(``transform_scripts``) and building elementwise arithmetic
(``elementwise_ir``). No passes live here.
"""
