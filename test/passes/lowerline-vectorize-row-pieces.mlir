// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-vectorize)" \
// RUN:   --split-input-file | FileCheck %s

// A 1-row piece of a register tile planned 8x32 whose columns are dynamic
// (lowerline-tile-and-fuse's row pieces of attention's QK^T over a dynamic
// sequence): its one row is vectorized as one row, only the columns masked
// at the planned 32.
// CHECK-LABEL: func.func @one_row_piece(
// CHECK:         vector.create_mask {{.+}} : vector<32xi1>
// CHECK-NOT:     vector<8x
// CHECK:         vector.fma {{.+}} : vector<32xf32>
// CHECK-NOT:     vector.fma
// CHECK:         return
func.func @one_row_piece(%a: tensor<1x1x1xf32>, %b: tensor<1x1x?xf32>, %c: tensor<1x1x?xf32>) -> tensor<1x1x?xf32> {
  %r = linalg.batch_matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 1, 8, 32, 1>} ins(%a, %b : tensor<1x1x1xf32>, tensor<1x1x?xf32>) outs(%c : tensor<1x1x?xf32>) -> tensor<1x1x?xf32>
  return %r : tensor<1x1x?xf32>
}

// -----

// A 4-row piece: four rows, each one masked 32-lane FMA.
// CHECK-LABEL: func.func @four_row_piece(
// CHECK-NOT:     vector<8x
// CHECK-COUNT-4: vector.fma {{.+}} : vector<32xf32>
// CHECK-NOT:     vector.fma
// CHECK:         return
func.func @four_row_piece(%a: tensor<1x4x1xf32>, %b: tensor<1x1x?xf32>, %c: tensor<1x4x?xf32>) -> tensor<1x4x?xf32> {
  %r = linalg.batch_matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 1, 8, 32, 1>} ins(%a, %b : tensor<1x4x1xf32>, tensor<1x1x?xf32>) outs(%c : tensor<1x4x?xf32>) -> tensor<1x4x?xf32>
  return %r : tensor<1x4x?xf32>
}

// -----

// Three rows (not a power of two: LLVM would split such a vector lane by
// lane) and dynamic rows keep the planned 8 rows, masked.
// CHECK-LABEL: func.func @other_rows_keep_the_plan(
// CHECK:         vector.transfer_read {{.+}} : tensor<1x3x?xf32>, vector<8x32xf32>
// CHECK:         vector.transfer_read {{.+}} : tensor<1x?x?xf32>, vector<8x32xf32>
// CHECK:         return
func.func @other_rows_keep_the_plan(%a: tensor<1x3x1xf32>, %b: tensor<1x1x?xf32>, %c: tensor<1x3x?xf32>, %d: tensor<1x?x1xf32>, %e: tensor<1x?x?xf32>) -> (tensor<1x3x?xf32>, tensor<1x?x?xf32>) {
  %r = linalg.batch_matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 1, 8, 32, 1>} ins(%a, %b : tensor<1x3x1xf32>, tensor<1x1x?xf32>) outs(%c : tensor<1x3x?xf32>) -> tensor<1x3x?xf32>
  %s = linalg.batch_matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 1, 8, 32, 1>} ins(%d, %b : tensor<1x?x1xf32>, tensor<1x1x?xf32>) outs(%e : tensor<1x?x?xf32>) -> tensor<1x?x?xf32>
  return %r, %s : tensor<1x3x?xf32>, tensor<1x?x?xf32>
}
