"""lowerline's own passes, grouped by the stage they serve, one module per pass
named after its flag (``lowerline-widen-i1-memrefs`` lives in
``lowering/widen_i1_memrefs.py``):

- ``graph/``: graph rewrites on linalg on tensors (graph stage);
- ``tiling/``: the CPU tiled stage (tile and fuse, Winograd, vectorize) and
  the IR helpers only those passes use;
- ``bufferization/``: buffers and copies (bufferized stage);
- ``lowering/``: loops and LLVM dialect (loops and llvm stages);
- ``gpu/``: the GPU stages;
- ``support/``: IR helpers shared by several groups (no passes).

Passes may import ``lowerline.pipeline`` (pass API, options), the planners
(``lowerline.cpu.tile_plan``, ``lowerline.gpu.plan``), ``lowerline.targets``,
``lowerline.weights`` and each other; never the driver, the runtime, the
frontend or the API. ``PASS_MODULES`` maps every flag to its module;
``lowerline.pipeline.registry`` imports a module the first time its flag is
looked up.
"""

PASS_MODULES: dict[str, str] = {
    "lowerline-drop-dead-results": "graph.drop_dead_results",
    "lowerline-fold-all-inf-checks": "graph.fold_all_inf_checks",
    "lowerline-bound-dynamic-dims": "graph.bound_dynamic_dims",
    "lowerline-fold-identity-extracts": "graph.fold_identity_extracts",
    "lowerline-expand-dynamic-reshapes": "graph.expand_dynamic_reshapes",
    "lowerline-lower-tm-tensor": "graph.lower_tm_tensor",
    "lowerline-fold-constant-transposes": "graph.fold_constant_transposes",
    "lowerline-fold-qdq-matmul": "graph.fold_qdq_matmul",
    "lowerline-fold-qdq-conv": "graph.fold_qdq_conv",
    "lowerline-fold-qdq-batch-matmul": "graph.fold_qdq_batch_matmul",
    "lowerline-sink-qdq-through-layout-ops": "graph.sink_qdq_through_layout_ops",
    "lowerline-fuse-elementwise": "graph.fuse_elementwise",
    "lowerline-sink-dequantize-through-max": "graph.sink_dequantize_through_max",
    "lowerline-hoist-sign-flips": "graph.hoist_sign_flips",
    "lowerline-fold-extf-into-contractions": "graph.fold_extf_into_contractions",
    "lowerline-decompose-transposed-conv": "graph.decompose_transposed_conv",
    "lowerline-collapse-broadcast-batch-matmul": "graph.collapse_broadcast_batch_matmul",
    "lowerline-read-gather-indices": "graph.read_gather_indices",
    "lowerline-pointwise-conv-rows": "graph.pointwise_conv_rows",
    "lowerline-fold-iota-extracts": "graph.fold_iota_extracts",
    "lowerline-collapse-expanded-elementwise": "graph.collapse_expanded_elementwise",
    "lowerline-align-elementwise-rows": "graph.align_elementwise_rows",
    "lowerline-decompose-pad": "tiling.decompose_pad",
    "lowerline-split-strided-columns": "tiling.split_strided_columns",
    "lowerline-vectorize-conv-channels": "tiling.vectorize_conv_channels",
    "lowerline-pack-weights": "tiling.pack_weights",
    "lowerline-tile-and-fuse": "tiling.tile_and_fuse",
    "lowerline-vectorize": "tiling.vectorize",
    "lowerline-fuse-row-sweeps": "tiling.fuse_row_sweeps",
    "lowerline-carry-masked-accumulators": "tiling.carry_masked_accumulators",
    "lowerline-winograd-conv": "tiling.winograd_conv",
    "lowerline-int8-conv-matmul": "tiling.int8_conv_matmul",
    "lowerline-amx-matmul": "tiling.amx_matmul",
    "lowerline-amx-tiles": "lowering.amx_tiles",
    "lowerline-copy-repeated-results": "bufferization.copy_repeated_results",
    "lowerline-allocate-reshaped-results": "bufferization.allocate_reshaped_results",
    "lowerline-plan-arena": "bufferization.plan_arena",
    "lowerline-split-empty-tensors": "bufferization.split_empty_tensors",
    "lowerline-strided-copies-to-linalg": "bufferization.strided_copies_to_linalg",
    "lowerline-approximate-exp": "lowering.approximate_exp",
    "lowerline-approximate-math": "lowering.approximate_math",
    "lowerline-check-integer-division": "lowering.check_integer_division",
    "lowerline-dynamic-omp-schedule": "lowering.dynamic_omp_schedule",
    "lowerline-expand-bf16-truncf": "lowering.expand_bf16_truncf",
    "lowerline-fold-erfc": "graph.fold_erfc",
    "lowerline-hoist-thread-number": "lowering.hoist_thread_number",
    "lowerline-minmax-accumulators": "lowering.minmax_accumulators",
    "lowerline-expand-minmax-reductions": "lowering.expand_minmax_reductions",
    "lowerline-omp-loop-nowait": "lowering.omp_loop_nowait",
    "lowerline-report-failed-asserts": "lowering.report_failed_asserts",
    "lowerline-require-llvm-dialect": "lowering.require_llvm_dialect",
    "lowerline-time-kernels": "lowering.time_kernels",
    "lowerline-unit-stride-gathers": "lowering.unit_stride_gathers",
    "lowerline-widen-i1-memrefs": "lowering.widen_i1_memrefs",
    "lowerline-gpu-align-shared-memory": "gpu.gpu_align_shared_memory",
    "lowerline-gpu-distribute": "gpu.gpu_distribute",
    "lowerline-gpu-dp4a": "gpu.gpu_dp4a",
    "lowerline-gpu-host-buffers": "gpu.gpu_host_buffers",
    "lowerline-gpu-map-to-launch": "gpu.gpu_map_to_launch",
    "lowerline-gpu-shared-to-host-memory": "gpu.gpu_shared_to_host_memory",
    "lowerline-gpu-tile-and-fuse": "gpu.gpu_tile_and_fuse",
}
