// The GPU tiled stage (lowerline-gpu-to-tiled): constant transposes folded,
// then every contraction group tiled into thread blocks on tensors
// (lowerline-gpu-tile-and-fuse), cleaned up by canonicalize and cse.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-tiled{target=sm_80})" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-tiled{target=sm_90})" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-tiled)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE

// No transpose of a constant survives.
// NONE-NOT: linalg.transpose

// Input: the graph stage's output (lowerline-to-graph).

// A linear layer with a constant weight used transposed (x @ W^T + b, ReLU):
// the transpose is folded into a new constant the k loop slices directly;
// the fill, the k loop (2 steps of 16) and the in-place epilogue are in one
// block forall; the original fill and matmul are gone.
// CHECK-LABEL: func.func @linear_relu(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<64x32xf32>) -> tensor<64x16xf32> attributes {lowerline.num_results = 1 : i64} {
// CHECK-DAG:     %[[BIAS:.+]] = arith.constant dense<2.500000e-01> : tensor<16xf32>
// CHECK-DAG:     %[[WT:.+]] = arith.constant dense_resource<{{lowerline_weight[0-9]+}}.t10> : tensor<32x16xf32>
// CHECK-DAG:     %[[STEP:.+]] = arith.constant 16 : index
// CHECK-NOT:     linalg.
// CHECK:         %[[NEST:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (1, 1) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<64x16xf32>) {
// CHECK-NEXT:      %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[OUT]] : tensor<64x16xf32>)
// CHECK-NEXT:      %[[ACC:.+]] = scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %[[STEP]] iter_args(%[[ITER:.+]] = %[[FILL]]) -> (tensor<64x16xf32>) {
// CHECK-NEXT:        %[[A:.+]] = tensor.extract_slice %[[X]][0, %[[K]]] [64, 16] [1, 1]
// CHECK-NEXT:        %[[B:.+]] = tensor.extract_slice %[[WT]][%[[K]], 0] [16, 16] [1, 1]
// CHECK-NEXT:        %[[MM:.+]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<64x16xf32>, tensor<16x16xf32>) outs(%[[ITER]] : tensor<64x16xf32>)
// CHECK-NEXT:        scf.yield %[[MM]]
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[EPI:.+]] = linalg.generic {{.+}} ins(%[[BIAS]] : tensor<16xf32>) outs(%[[ACC]] : tensor<64x16xf32>)
// CHECK:             arith.addf
// CHECK:             arith.maximumf
// CHECK:           scf.forall.in_parallel {
// CHECK-NEXT:        tensor.parallel_insert_slice %[[EPI]] into %[[OUT]]
// CHECK:         } {lowerline.gpu_threads = array<i64: {{[0-9]+}}, {{[0-9]+}}>, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NEXT:    return %[[NEST]] : tensor<64x16xf32>
// CHECK:       dialect_resources
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @linear_relu(%x: tensor<64x32xf32>) -> tensor<64x16xf32> {
  %w = arith.constant dense<5.000000e-01> : tensor<16x32xf32>
  %bias = arith.constant dense<2.500000e-01> : tensor<16xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %et = tensor.empty() : tensor<32x16xf32>
  %wt = linalg.transpose ins(%w : tensor<16x32xf32>) outs(%et : tensor<32x16xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<64x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %mm = linalg.matmul ins(%x, %wt : tensor<64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<64x16xf32>) -> tensor<64x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<64x16xf32>, tensor<16xf32>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

// -----

// A 128x128 output: 2 x 2 blocks of 64x64, each slicing its rows of A and
// columns of B; the k loop runs over all of k (4 steps of 16).
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<128x64xf32>, %[[B:[^:]+]]: tensor<64x128xf32>)
// CHECK-DAG:     %[[STEP:.+]] = arith.constant 16 : index
// CHECK-DAG:     %[[K_END:.+]] = arith.constant 64 : index
// CHECK-NOT:     linalg.
// CHECK:         %[[NEST:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (2, 2) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<128x128xf32>) {
// CHECK-DAG:       %[[A_T:.+]] = tensor.extract_slice %[[A]][%{{.+}}, 0] [64, 64] [1, 1]
// CHECK-DAG:       %[[B_T:.+]] = tensor.extract_slice %[[B]][0, %{{.+}}] [64, 64] [1, 1]
// CHECK-DAG:       %[[O_T:.+]] = tensor.extract_slice %[[OUT]][%{{.+}}, %{{.+}}] [64, 64] [1, 1]
// CHECK:           %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[O_T]] : tensor<64x64xf32>)
// CHECK:           %[[ACC:.+]] = scf.for %{{.+}} = %{{.+}} to %[[K_END]] step %[[STEP]] iter_args(%{{.+}} = %[[FILL]])
// CHECK:             linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x16xf32>, tensor<16x64xf32>) outs(%{{.+}} : tensor<64x64xf32>)
// CHECK:           scf.forall.in_parallel {
// CHECK-NEXT:        tensor.parallel_insert_slice %[[ACC]] into %[[OUT]][%{{.+}}, %{{.+}}] [64, 64] [1, 1]
// CHECK:         } {lowerline.gpu_threads = array<i64: 16, 16>, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NEXT:    return %[[NEST]]
func.func @matmul(%a: tensor<128x64xf32>, %b: tensor<64x128xf32>) -> tensor<128x128xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<128x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<128x64xf32>, tensor<64x128xf32>) outs(%f : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %mm : tensor<128x128xf32>
}

// -----

// Ops outside contraction groups are not tiled here (lowerline-gpu-distribute
// maps them after bufferization).
// CHECK-LABEL: func.func @softmax_denominator(
// CHECK-SAME:      attributes {lowerline.num_results = 1 : i64}
// CHECK-NOT:     scf.forall
// CHECK:         linalg.fill
// CHECK:         linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]
// CHECK:           math.exp
// CHECK-NOT:     scf.forall
// CHECK:         return
func.func @softmax_denominator(%x: tensor<8x32xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x32xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ex = math.exp %a : f32
    %r = arith.addf %ex, %o : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}
