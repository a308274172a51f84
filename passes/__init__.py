"""lowerline's own passes, one module per pass, the module named after its flag
(``lowerline-widen-i1-memrefs`` lives in ``widen_i1_memrefs.py``).

Modules listed here are imported on first use of the pass registry.
"""

PASS_MODULES = (
    "approximate_exp",
    "copy_repeated_results",
    "decompose_pad",
    "dynamic_omp_schedule",
    "expand_bf16_truncf",
    "fold_constant_transposes",
    "fuse_elementwise",
    "gpu_tile_and_fuse",
    "gpu_align_shared_memory",
    "gpu_distribute",
    "gpu_host_buffers",
    "gpu_map_to_launch",
    "gpu_shared_to_host_memory",
    "pack_weights",
    "split_empty_tensors",
    "strided_copies_to_linalg",
    "tile_and_fuse",
    "vectorize",
    "widen_i1_memrefs",
    "winograd_conv",
)
