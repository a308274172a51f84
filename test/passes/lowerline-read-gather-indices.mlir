// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-read-gather-indices))" \
// RUN:   --split-input-file | FileCheck %s

// An embedding's rows (torch-mlir's index_select): the row index is read in
// the body at linalg.index 0, the same for every column, so the vectorizer
// can read each row contiguously.
// CHECK-LABEL: func.func @row_index_moves_into_the_body(
// CHECK-SAME:      %[[TABLE:[a-z0-9]+]]: tensor<37x67xf32>, %[[IDS:[a-z0-9]+]]: tensor<104xi64>)
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:.+]]: i64, %[[OUT:.+]]: f32):
// CHECK-NEXT:      %[[ROW:.+]] = linalg.index 0 : index
// CHECK-NEXT:      %[[ID:.+]] = tensor.extract %[[IDS]][%[[ROW]]] : tensor<104xi64>
// CHECK-NEXT:      %[[R:.+]] = arith.index_cast %[[ID]] : i64 to index
// CHECK-NEXT:      %[[C:.+]] = linalg.index 1 : index
// CHECK-NEXT:      tensor.extract %[[TABLE]][%[[R]], %[[C]]]
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @row_index_moves_into_the_body(%table: tensor<37x67xf32>, %ids: tensor<104xi64>) -> tensor<104x67xf32> {
  %e = tensor.empty() : tensor<104x67xf32>
  %r = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<104xi64>) outs(%e : tensor<104x67xf32>) {
  ^bb0(%in: i64, %out: f32):
    %i = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<37x67xf32>
    linalg.yield %v : f32
  } -> tensor<104x67xf32>
  return %r : tensor<104x67xf32>
}

// -----

// The index changes along the innermost loop (a gather along the last dim):
// it stays an input, a vector read as it is.
// CHECK-LABEL: func.func @innermost_index_stays(
// CHECK:         ^bb0(%[[IN:.+]]: i64, %{{.+}}: f32):
// CHECK-NEXT:      linalg.index 0
// CHECK-NEXT:      arith.index_cast %[[IN]]
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @innermost_index_stays(%x: tensor<5x9xf32>, %ids: tensor<5x3xi64>) -> tensor<5x3xf32> {
  %e = tensor.empty() : tensor<5x3xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<5x3xi64>) outs(%e : tensor<5x3xf32>) {
  ^bb0(%in: i64, %out: f32):
    %i = linalg.index 0 : index
    %j = arith.index_cast %in : i64 to index
    %v = tensor.extract %x[%i, %j] : tensor<5x9xf32>
    linalg.yield %v : f32
  } -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

// -----

// An integer input that is a value, not an index (no tensor.extract reads
// at it), stays an input.
// CHECK-LABEL: func.func @value_input_stays(
// CHECK:         ^bb0(%[[IN:.+]]: i64, %{{.+}}: i64):
// CHECK-NEXT:      linalg.index 1
// CHECK-NEXT:      tensor.extract
// CHECK-NEXT:      arith.addi %{{.+}}, %[[IN]]
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @value_input_stays(%x: tensor<7xi64>, %bias: tensor<4xi64>) -> tensor<4x7xi64> {
  %e = tensor.empty() : tensor<4x7xi64>
  %r = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<4xi64>) outs(%e : tensor<4x7xi64>) {
  ^bb0(%in: i64, %out: i64):
    %j = linalg.index 1 : index
    %v = tensor.extract %x[%j] : tensor<7xi64>
    %s = arith.addi %v, %in : i64
    linalg.yield %s : i64
  } -> tensor<4x7xi64>
  return %r : tensor<4x7xi64>
}
