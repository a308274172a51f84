// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=haswell},lowerline-vectorize{target=haswell})" \
// RUN:   --split-input-file | FileCheck %s

// An i8 x i8 -> i32 batch matmul (lowerline-fold-qdq-batch-matmul's): its
// register tiles keep the unit batch dim, which upstream's outer-product
// lowering does not take, so the contraction's operands are sign-extended
// to i32 first and it lowers as a float one does; no contraction is left.
// CHECK-LABEL: func.func @widens_batched_integer_contraction(
// CHECK:         arith.extsi %{{.+}} : vector<5x1xi8> to vector<5x1xi32>
// CHECK:         arith.extsi %{{.+}} : vector<8xi8> to vector<8xi32>
// CHECK-NOT:     vector.contract
// CHECK:         return
func.func @widens_batched_integer_contraction(%x: tensor<2x5x7xi8>, %w: tensor<2x7x9xi8>) -> tensor<2x5x9xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x5x9xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x5x9xi32>) -> tensor<2x5x9xi32>
  %mm = linalg.batch_matmul ins(%x, %w : tensor<2x5x7xi8>, tensor<2x7x9xi8>) outs(%f : tensor<2x5x9xi32>) -> tensor<2x5x9xi32>
  return %mm : tensor<2x5x9xi32>
}

// -----

// A float batch matmul is untouched (one element type).
// CHECK-LABEL: func.func @float_batch_matmul_is_not_widened(
// CHECK-NOT:     arith.extsi
// CHECK:         return
func.func @float_batch_matmul_is_not_widened(%x: tensor<2x5x7xf32>, %w: tensor<2x7x9xf32>) -> tensor<2x5x9xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5x9xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x5x9xf32>) -> tensor<2x5x9xf32>
  %mm = linalg.batch_matmul ins(%x, %w : tensor<2x5x7xf32>, tensor<2x7x9xf32>) outs(%f : tensor<2x5x9xf32>) -> tensor<2x5x9xf32>
  return %mm : tensor<2x5x9xf32>
}

// -----

// An f16 x f16 -> f32 batch matmul (torch-mlir's half batch matmul, which
// accumulates in f32): the same mixed-type contraction, extended with extf.
// CHECK-LABEL: func.func @widens_batched_half_contraction(
// CHECK:         arith.extf %{{.+}} : vector<5x1xf16> to vector<5x1xf32>
// CHECK:         arith.extf %{{.+}} : vector<8xf16> to vector<8xf32>
// CHECK-NOT:     vector.contract
// CHECK-NOT:     arith.extsi
// CHECK:         return
func.func @widens_batched_half_contraction(%x: tensor<2x5x7xf16>, %w: tensor<2x7x9xf16>) -> tensor<2x5x9xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5x9xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x5x9xf32>) -> tensor<2x5x9xf32>
  %mm = linalg.batch_matmul ins(%x, %w : tensor<2x5x7xf16>, tensor<2x7x9xf16>) outs(%f : tensor<2x5x9xf32>) -> tensor<2x5x9xf32>
  return %mm : tensor<2x5x9xf32>
}
