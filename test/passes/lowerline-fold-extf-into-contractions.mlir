// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fold-extf-into-contractions),canonicalize)" \
// RUN:   --split-input-file | FileCheck %s

// torch-mlir's bf16 linear: both operands widened by an extf generic, an f32
// matmul. The matmul reads the bf16 tensors; the widened copies are gone.
// CHECK-LABEL: func.func @reads_bf16_operands(
// CHECK-SAME:    %[[X:.+]]: tensor<5x7xbf16>, %[[W:.+]]: tensor<7x3xbf16>
// CHECK-NOT:     arith.extf
// CHECK:         linalg.matmul ins(%[[X]], %[[W]] : tensor<5x7xbf16>, tensor<7x3xbf16>) outs(%{{.+}} : tensor<5x3xf32>)
// CHECK-NOT:     arith.extf
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @reads_bf16_operands(%x: tensor<5x7xbf16>, %w: tensor<7x3xbf16>) -> tensor<5x3xf32> {
  %e0 = tensor.empty() : tensor<5x7xf32>
  %x32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<5x7xbf16>) outs(%e0 : tensor<5x7xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<5x7xf32>
  %e1 = tensor.empty() : tensor<7x3xf32>
  %w32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<7x3xbf16>) outs(%e1 : tensor<7x3xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<7x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  %mm = linalg.matmul ins(%x32, %w32 : tensor<5x7xf32>, tensor<7x3xf32>) outs(%f : tensor<5x3xf32>) -> tensor<5x3xf32>
  return %mm : tensor<5x3xf32>
}

// -----

// A batch matmul (attention's scores) likewise.
// CHECK-LABEL: func.func @batch_matmul_reads_bf16(
// CHECK:         linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<2x5x7xbf16>, tensor<2x7x3xbf16>) outs(%{{.+}} : tensor<2x5x3xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @batch_matmul_reads_bf16(%x: tensor<2x5x7xbf16>, %w: tensor<2x7x3xbf16>, %acc: tensor<2x5x3xf32>) -> tensor<2x5x3xf32> {
  %e0 = tensor.empty() : tensor<2x5x7xf32>
  %x32 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x5x7xbf16>) outs(%e0 : tensor<2x5x7xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<2x5x7xf32>
  %e1 = tensor.empty() : tensor<2x7x3xf32>
  %w32 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<2x7x3xbf16>) outs(%e1 : tensor<2x7x3xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<2x7x3xf32>
  %mm = linalg.batch_matmul ins(%x32, %w32 : tensor<2x5x7xf32>, tensor<2x7x3xf32>) outs(%acc : tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  return %mm : tensor<2x5x3xf32>
}

// -----

// Not folded: the widening generic also scales (it is no plain extension),
// so the matmul keeps its f32 operands.
// CHECK-LABEL: func.func @keeps_extension_that_computes(
// CHECK:         arith.extf
// CHECK:         arith.mulf
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<5x7xf32>, tensor<7x3xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @keeps_extension_that_computes(%x: tensor<5x7xbf16>, %w: tensor<7x3xf32>, %acc: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %e0 = tensor.empty() : tensor<5x7xf32>
  %two = arith.constant 2.0 : f32
  %x32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<5x7xbf16>) outs(%e0 : tensor<5x7xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.mulf %0, %two : f32
    linalg.yield %1 : f32
  } -> tensor<5x7xf32>
  %mm = linalg.matmul ins(%x32, %w : tensor<5x7xf32>, tensor<7x3xf32>) outs(%acc : tensor<5x3xf32>) -> tensor<5x3xf32>
  return %mm : tensor<5x3xf32>
}

// -----

// Not folded: only one operand is narrow (the other is a plain f32 tensor),
// and an f32 matmul already reads f32.
// CHECK-LABEL: func.func @keeps_mixed_operands(
// CHECK:         arith.extf
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<5x7xf32>, tensor<7x3xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @keeps_mixed_operands(%x: tensor<5x7xbf16>, %w: tensor<7x3xf32>, %acc: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %e0 = tensor.empty() : tensor<5x7xf32>
  %x32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<5x7xbf16>) outs(%e0 : tensor<5x7xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<5x7xf32>
  %mm = linalg.matmul ins(%x32, %w : tensor<5x7xf32>, tensor<7x3xf32>) outs(%acc : tensor<5x3xf32>) -> tensor<5x3xf32>
  return %mm : tensor<5x3xf32>
}
