// The GPU half of the tiled stage: each contraction group (matmul, batch
// matmul, NCHW convolution, with its fill and elementwise epilogue) becomes
// one scf.forall over output tiles mapped to #gpu.block, holding the fill, an
// scf.for over the reduction in shared-memory steps and the epilogue. The plan
// (explain: remarks) goes to stderr, checked separately.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-tile-and-fuse{explain})" \
// RUN:   --split-input-file 2>%t.explain | FileCheck %s
// RUN: FileCheck %s --input-file=%t.explain --check-prefix=EXPLAIN
// The target is an option of the pass; an unknown one is an error.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-tile-and-fuse{target=sm_90 explain})" \
// RUN:   --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=SM90
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-tile-and-fuse{target=sm_1})" \
// RUN:   --split-input-file 2>&1 | FileCheck %s --check-prefix=BADTARGET

// SM90:      remark: builtin.module: target sm_90 [lowerline-gpu-tile-and-fuse]
// SM90-NEXT: remark: linalg.matmul: g0: matmul;
// BADTARGET: <pass-pipeline>:1:{{[0-9]+}}: error: option 'target' of 'lowerline-gpu-tile-and-fuse': unknown GPU target 'sm_1'; targets: {{.*}}sm_80

// matmul + fill + bias + relu: one group. One block per 64x64 output tile
// (2 x 4 blocks for 128x256), the fill, a k loop in steps of 16 (the operand
// tiles lowerline-gpu-distribute stages in shared memory) and the epilogue,
// rewritten to update the accumulator in place (its init is the k loop's
// result, not a tensor.empty). The planned thread grid (16 x 16 threads of
// 4x4 outputs) rides on the forall; the function records its result count
// for lowerline-gpu-host-buffers.
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+33]]:{{[0-9]+}}: remark: linalg.matmul: g0: matmul; fused fill, linalg.generic; tiles: block [64, 64, 0], reduction step [0, 0, 16], 256 threads as [16, 16], 8192 B shared [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NOT:  not fused

// CHECK-LABEL: func.func @matmul_bias_relu(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<128x32xf32>, %[[B:[^:]+]]: tensor<32x256xf32>, %[[BIAS:[^:]+]]: tensor<256xf32>)
// CHECK-SAME:      attributes {lowerline.num_results = 1 : i64}
// CHECK:         %[[NEST:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (2, 4) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<128x256xf32>) {
// CHECK:           %[[BIAS_T:.+]] = tensor.extract_slice %[[BIAS]][%{{.+}}] [64] [1]
// CHECK:           %[[A_T:.+]] = tensor.extract_slice %[[A]][%{{.+}}, 0] [64, 32] [1, 1]
// CHECK:           %[[B_T:.+]] = tensor.extract_slice %[[B]][0, %{{.+}}] [32, 64] [1, 1]
// CHECK:           %[[OUT_T:.+]] = tensor.extract_slice %[[OUT]][%{{.+}}, %{{.+}}] [64, 64] [1, 1]
// CHECK:           %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[OUT_T]] : tensor<64x64xf32>)
// CHECK:           %[[ACC:.+]] = scf.for %[[K:[a-z0-9_]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ITER:.+]] = %[[FILL]]) -> (tensor<64x64xf32>) {
// CHECK-DAG:         tensor.extract_slice %[[A_T]][0, %[[K]]] [64, 16] [1, 1]
// CHECK-DAG:         tensor.extract_slice %[[B_T]][%[[K]], 0] [16, 64] [1, 1]
// CHECK:             linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x16xf32>, tensor<16x64xf32>) outs(%{{.+}} : tensor<64x64xf32>)
// CHECK:             scf.yield
// CHECK:           }
// CHECK:           %[[EPI:.+]] = linalg.generic
// CHECK-SAME:          ins(%[[BIAS_T]] : tensor<64xf32>) outs(%[[ACC]] : tensor<64x64xf32>)
// CHECK:             arith.addf
// CHECK:             arith.maximumf
// CHECK:           scf.forall.in_parallel {
// CHECK-NEXT:        tensor.parallel_insert_slice %[[EPI]] into %[[OUT]][%{{.+}}, %{{.+}}] [64, 64] [1, 1]
// CHECK:         } {lowerline.gpu_threads = array<i64: 16, 16>, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NOT:     linalg.
// CHECK:         return %[[NEST]] : tensor<128x256xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @matmul_bias_relu(%a: tensor<128x32xf32>, %b: tensor<32x256xf32>, %bias: tensor<256xf32>) -> tensor<128x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x256xf32>) -> tensor<128x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<128x32xf32>, tensor<32x256xf32>) outs(%f : tensor<128x256xf32>) -> tensor<128x256xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<128x256xf32>, tensor<256xf32>) outs(%e : tensor<128x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<128x256xf32>
  return %r : tensor<128x256xf32>
}

// -----

// A batch matmul: one block per batch (the batch dim is a third block dim),
// the thread grid has no threads along the batch (0).
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+13]]:{{[0-9]+}}: remark: linalg.batch_matmul: g0: batch_matmul; fused fill; tiles: block [1, 8, 16, 0], reduction step [0, 0, 0, 16]

// CHECK-LABEL: func.func @batch_matmul(
// CHECK:         %[[NEST:.+]] = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (3, 1, 1) shared_outs(%{{.+}}) -> (tensor<3x8x16xf32>) {
// CHECK:           %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x8x16xf32>)
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[FILL]]) -> (tensor<1x8x16xf32>) {
// CHECK:             linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<1x8x16xf32>, tensor<1x16x16xf32>) outs(%{{.+}} : tensor<1x8x16xf32>)
// CHECK:         } {lowerline.gpu_threads = array<i64: 0, {{[0-9]+}}, {{[0-9]+}}>, mapping = [#gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK:         return %[[NEST]]
func.func @batch_matmul(%a: tensor<3x8x32xf32>, %b: tensor<3x32x16xf32>) -> tensor<3x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x8x16xf32>) -> tensor<3x8x16xf32>
  %mm = linalg.batch_matmul ins(%a, %b : tensor<3x8x32xf32>, tensor<3x32x16xf32>) outs(%f : tensor<3x8x16xf32>) -> tensor<3x8x16xf32>
  return %mm : tensor<3x8x16xf32>
}

// -----

// An NCHW convolution: blocks over (output channels, rows, columns), the
// input channels in steps of 4; each step reads an input window of
// 4 + 3 - 1 = 6 rows.
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+13]]:{{[0-9]+}}: remark: linalg.conv_2d_nchw_fchw: g0: conv_2d_nchw_fchw; fused fill; tiles: block [0, 16, 4, 16, 0, 0, 0], reduction step [0, 0, 0, 0, 4, 0, 0]

// CHECK-LABEL: func.func @conv(
// CHECK:         %[[NEST:.+]] = scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, 1) shared_outs(%{{.+}}) -> (tensor<1x16x16x16xf32>) {
// CHECK:           %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x16x4x16xf32>)
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[FILL]]) -> (tensor<1x16x4x16xf32>) {
// CHECK:             linalg.conv_2d_nchw_fchw {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x4x6x18xf32>, tensor<16x4x3x3xf32>) outs(%{{.+}} : tensor<1x16x4x16xf32>)
// CHECK:         } {lowerline.gpu_threads = array<i64: 0, {{[0-9, ]+}}>, mapping = [#gpu.block<linear_dim_2>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK:         return %[[NEST]]
func.func @conv(%x: tensor<1x8x18x18xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x18x18xf32>, tensor<16x8x3x3xf32>) outs(%f : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  return %c : tensor<1x16x16x16xf32>
}

// -----

// f16 operands accumulating in f32: a group, its shared tiles counted at
// 2 bytes an element ((64*16 + 16*64) * 2).
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+6]]:{{[0-9]+}}: remark: linalg.matmul: g0: matmul; fused nothing; tiles: block [64, 64, 0], reduction step [0, 0, 16], 256 threads as [16, 16], 4096 B shared

// CHECK-LABEL: func.func @f16_operands(
// CHECK:         scf.forall
// CHECK:           linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x16xf16>, tensor<16x64xf16>) outs(%{{.+}} : tensor<64x64xf32>)
func.func @f16_operands(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>, %init: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %mm = linalg.matmul ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %mm : tensor<64x64xf32>
}

// -----

// A consumer reading the matmul result transposed is refused (it would
// recompute): the block forall holds the fill and the matmul only, the
// consumer stays at the top level and reads the forall's result.
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: linalg.matmul: g0: matmul; fused fill; tiles: block [32, 32, 0], reduction step [0, 0, 16], 64 threads as [8, 8], 4096 B shared
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+17]]:8: remark: linalg.generic: not fused into g0: it reads the result through (d0, d1) -> (d1, d0): it would recompute [lowerline-gpu-tile-and-fuse]

// CHECK-LABEL: func.func @refuses_transposed_consumer(
// CHECK:         %[[NEST:.+]] = scf.forall
// CHECK-NOT:       linalg.generic
// CHECK:           linalg.matmul
// CHECK-NOT:       linalg.generic
// CHECK:         } {lowerline.gpu_threads = array<i64: 8, 8>, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK:         %[[T:.+]] = linalg.generic {{.+}} ins(%[[NEST]] : tensor<32x32xf32>)
// CHECK:         return %[[T]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func @refuses_transposed_consumer(%a: tensor<32x64xf32>, %b: tensor<64x32xf32>) -> tensor<32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x32xf32>) -> tensor<32x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x32xf32>) outs(%f : tensor<32x32xf32>) -> tensor<32x32xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<32x32xf32>
  return %t : tensor<32x32xf32>
}

// -----

// Two results: both counted for the host; two groups, numbered across the
// module; the first matmul's result has two users, so nothing fuses into it.
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+12]]:{{[0-9]+}}: remark: linalg.matmul: g0: matmul; fused nothing; tiles: block [64, 64, 0]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+11]]:{{[0-9]+}}: remark: linalg.matmul: no consumer fused into g0: the result has 2 users and must be stored anyway [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+11]]:{{[0-9]+}}: remark: linalg.matmul: g1: matmul; fused nothing

// CHECK-LABEL: func.func @two_results(
// CHECK-SAME:      attributes {lowerline.num_results = 2 : i64}
// CHECK:         %[[M1:.+]] = scf.forall {{.+}} {
// CHECK:         } {lowerline.gpu_threads
// CHECK:         %[[M2:.+]] = scf.forall {{.+}} {
// CHECK:         } {lowerline.gpu_threads
// CHECK:         return %[[M1]], %[[M2]]
func.func @two_results(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %init: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %m1 = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  %m2 = linalg.matmul ins(%m1, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%init : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %m1, %m2 : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// Not fired: a convolution whose tiles do not fit the 48 KiB of static shared
// memory (11x11 filter, stride 4) is skipped, left for lowerline-gpu-distribute
// (one output point per thread).
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+8]]:{{[0-9]+}}: remark: linalg.conv_2d_nchw_fchw: not tiled (one point per thread): {{[0-9]+}} B shared > 49152 B per block [lowerline-gpu-tile-and-fuse]

// CHECK-LABEL: func.func @skips_conv_too_big_for_shared_memory(
// CHECK-NOT:     scf.forall
// CHECK:         linalg.conv_2d_nchw_fchw {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x3x227x227xf32>, tensor<64x3x11x11xf32>)
// CHECK-NOT:     scf.forall
// CHECK:         return
func.func @skips_conv_too_big_for_shared_memory(%x: tensor<1x3x227x227xf32>, %w: tensor<64x3x11x11xf32>, %init: tensor<1x64x55x55xf32>) -> tensor<1x64x55x55xf32> {
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<4> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x227x227xf32>, tensor<64x3x11x11xf32>) outs(%init : tensor<1x64x55x55xf32>) -> tensor<1x64x55x55xf32>
  return %c : tensor<1x64x55x55xf32>
}

// -----

// Not fired: dynamic shapes and integer matmuls other than i8 x i8 -> i32
// (an i16 accumulator overflows) are skipped, with reasons.
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+11]]:{{[0-9]+}}: remark: linalg.matmul: not tiled (one point per thread): dynamic shapes [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: lowerline-gpu-tile-and-fuse.mlir:[[@LINE+11]]:{{[0-9]+}}: remark: linalg.matmul: not tiled (one point per thread): mixed or unsupported element types [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NOT:  g0:

// CHECK-LABEL: func.func @skips_dynamic_and_integer(
// CHECK-NOT:     scf.forall
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<?x32xf32>, tensor<32x16xf32>)
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x64xi8>, tensor<64x64xi8>)
// CHECK-NOT:     scf.forall
// CHECK:         return
func.func @skips_dynamic_and_integer(%a: tensor<?x32xf32>, %b: tensor<32x16xf32>, %init: tensor<?x16xf32>, %ia: tensor<64x64xi8>, %iinit: tensor<64x64xi16>) -> (tensor<?x16xf32>, tensor<64x64xi16>) {
  %mm = linalg.matmul ins(%a, %b : tensor<?x32xf32>, tensor<32x16xf32>) outs(%init : tensor<?x16xf32>) -> tensor<?x16xf32>
  %im = linalg.matmul ins(%ia, %ia : tensor<64x64xi8>, tensor<64x64xi8>) outs(%iinit : tensor<64x64xi16>) -> tensor<64x64xi16>
  return %mm, %im : tensor<?x16xf32>, tensor<64x64xi16>
}

// -----

// Not fired: a function without contractions is left as it is (only its
// result count is recorded); the plan has no group.
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NOT:  g0:
// EXPLAIN-NOT:  not tiled

// CHECK-LABEL: func.func @no_contraction(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<16x8xf32>) -> tensor<16x8xf32> attributes {lowerline.num_results = 1 : i64} {
// CHECK-NOT:     scf.forall
// CHECK:         %[[R:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<16x8xf32>)
// CHECK:           arith.maximumf
// CHECK-NOT:     scf.forall
// CHECK:         return %[[R]]
func.func @no_contraction(%a: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

// Fired: an i8 x i8 -> i32 matmul (what lowerline-fold-qdq-matmul makes) is
// tiled like a float one.
// EXPLAIN:      remark: builtin.module: target sm_80 [lowerline-gpu-tile-and-fuse]
// EXPLAIN-NEXT: remark: linalg.matmul: g0: matmul; fused nothing; tiles: block [64, 64, 0]
// CHECK-LABEL: func.func @tiles_int8_matmul(
// CHECK:         scf.forall
// CHECK:           scf.for
// CHECK:             linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x16xi8>, tensor<16x64xi8>) outs(%{{.+}} : tensor<64x64xi32>)
// CHECK:         } {lowerline.gpu_threads = array<i64: 16, 16>
func.func @tiles_int8_matmul(%ia: tensor<64x64xi8>, %iinit: tensor<64x64xi32>) -> tensor<64x64xi32> {
  %im = linalg.matmul ins(%ia, %ia : tensor<64x64xi8>, tensor<64x64xi8>) outs(%iinit : tensor<64x64xi32>) -> tensor<64x64xi32>
  return %im : tensor<64x64xi32>
}
