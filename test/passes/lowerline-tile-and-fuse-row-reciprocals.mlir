// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize)" \
// RUN:   --split-input-file | FileCheck %s

// The last op of a softmax over a dynamic row divides by the row's sum: it
// multiplies by the sum's reciprocal, computed once per row outside the
// row's vector loops (as a static row kernel does).
// CHECK-LABEL: func.func @divides_by_row_sum_once_per_row(
// CHECK:         %[[R:.+]] = arith.divf %{{.+}}, %{{.+}} : vector<64xf32>
// CHECK:         scf.for
// CHECK-NOT:       arith.divf
// CHECK:           arith.mulf %{{.+}}, %[[R]] : vector<64xf32>
#m3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#m5 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @divides_by_row_sum_once_per_row(%x: tensor<4x?x?xf32>, %s: index) -> tensor<4x?x?xf32> {
  %z = arith.constant 0.0 : f32
  %e3 = tensor.empty(%s) : tensor<4x?x1xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<4x?x1xf32>) -> tensor<4x?x1xf32>
  %sum = linalg.generic {indexing_maps = [#m3, #m5], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<4x?x?xf32>) outs(%f3 : tensor<4x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4x?x1xf32>
  %e4 = tensor.empty(%s, %s) : tensor<4x?x?xf32>
  %y = linalg.generic {indexing_maps = [#m3, #m5, #m3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %sum : tensor<4x?x?xf32>, tensor<4x?x1xf32>) outs(%e4 : tensor<4x?x?xf32>) {
  ^bb0(%in: f32, %sm: f32, %out: f32):
    %q = arith.divf %in, %sm : f32
    linalg.yield %q : f32
  } -> tensor<4x?x?xf32>
  return %y : tensor<4x?x?xf32>
}

// -----

// A division by another tensor (not a reduction's result) keeps its exact
// rounding: a division per vector.
// CHECK-LABEL: func.func @divides_by_an_argument_exactly(
// CHECK-NOT:     arith.mulf
// CHECK:         scf.for
// CHECK:           arith.divf %{{.+}}, %{{.+}} : vector<64xf32>
// CHECK-NOT:     arith.mulf
#m3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#m5 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @divides_by_an_argument_exactly(%x: tensor<4x?x?xf32>, %d: tensor<4x?x1xf32>, %s: index) -> tensor<4x?x?xf32> {
  %e4 = tensor.empty(%s, %s) : tensor<4x?x?xf32>
  %y = linalg.generic {indexing_maps = [#m3, #m5, #m3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %d : tensor<4x?x?xf32>, tensor<4x?x1xf32>) outs(%e4 : tensor<4x?x?xf32>) {
  ^bb0(%in: f32, %sm: f32, %out: f32):
    %q = arith.divf %in, %sm : f32
    linalg.yield %q : f32
  } -> tensor<4x?x?xf32>
  return %y : tensor<4x?x?xf32>
}
