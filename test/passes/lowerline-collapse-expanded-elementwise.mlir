// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-collapse-expanded-elementwise),canonicalize)" \
// RUN:   --split-input-file | FileCheck %s

// A linear layer's 2-D result, expanded to (3, 5, 7), then GELU-like math
// and a residual add with a 3-D argument: both run over the 15x7 rows, the
// argument collapsed (a view), and only the last result is expanded.
// CHECK-LABEL: func.func @chain_over_rows(
// CHECK-SAME:      %[[H:.+]]: tensor<15x7xf32>, %[[X:.+]]: tensor<3x5x7xf32>)
// CHECK:         %[[A:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} ins(%[[H]] : tensor<15x7xf32>)
// CHECK:           math.erf
// CHECK:         %[[XR:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<3x5x7xf32> into tensor<15x7xf32>
// CHECK:         %[[B:.+]] = linalg.generic {{.+}} ins(%[[A]], %[[XR]] : tensor<15x7xf32>, tensor<15x7xf32>)
// CHECK:         %[[R:.+]] = tensor.expand_shape %[[B]] {{\[}}[0, 1], [2]] output_shape [3, 5, 7]
// CHECK-NEXT:    return %[[R]]
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @chain_over_rows(%h: tensor<15x7xf32>, %x: tensor<3x5x7xf32>) -> tensor<3x5x7xf32> {
  %e = tensor.expand_shape %h [[0, 1], [2]] output_shape [3, 5, 7] : tensor<15x7xf32> into tensor<3x5x7xf32>
  %init = tensor.empty() : tensor<3x5x7xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e : tensor<3x5x7xf32>) outs(%init : tensor<3x5x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.erf %in : f32
    linalg.yield %v : f32
  } -> tensor<3x5x7xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%g, %x : tensor<3x5x7xf32>, tensor<3x5x7xf32>) outs(%init : tensor<3x5x7xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<3x5x7xf32>
  return %r : tensor<3x5x7xf32>
}

// -----

// A bias over n (broadcast over b and m) keeps its map.
// CHECK-LABEL: func.func @bias_over_columns(
// CHECK:         linalg.generic {indexing_maps = [#{{.+}}, #[[BIAS:.+]], #{{.+}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      tensor<15x7xf32>, tensor<7xf32>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#n = affine_map<(d0, d1, d2) -> (d2)>
func.func @bias_over_columns(%h: tensor<15x7xf32>, %bias: tensor<7xf32>) -> tensor<3x5x7xf32> {
  %e = tensor.expand_shape %h [[0, 1], [2]] output_shape [3, 5, 7] : tensor<15x7xf32> into tensor<3x5x7xf32>
  %init = tensor.empty() : tensor<3x5x7xf32>
  %r = linalg.generic {indexing_maps = [#id, #n, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %bias : tensor<3x5x7xf32>, tensor<7xf32>) outs(%init : tensor<3x5x7xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<3x5x7xf32>
  return %r : tensor<3x5x7xf32>
}

// -----

// Left alone: a split of the last dim (heads), an operand that is a slice
// (its collapse could be a copy), a body reading linalg.index, and a
// reduction.
// CHECK-LABEL: func.func @not_collapsed(
// CHECK-COUNT-4: iterator_types = ["parallel", "parallel", {{.+}}]
// CHECK-NOT:     iterator_types = ["parallel", "parallel"]}
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#red = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @not_collapsed(%h: tensor<15x7xf32>, %heads: tensor<3x35xf32>, %big: tensor<3x9x7xf32>)
    -> (tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5xf32>) {
  %init = tensor.empty() : tensor<3x5x7xf32>
  %split = tensor.expand_shape %heads [[0], [1, 2]] output_shape [3, 5, 7] : tensor<3x35xf32> into tensor<3x5x7xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%split : tensor<3x5x7xf32>) outs(%init : tensor<3x5x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.erf %in : f32
    linalg.yield %v : f32
  } -> tensor<3x5x7xf32>
  %e = tensor.expand_shape %h [[0, 1], [2]] output_shape [3, 5, 7] : tensor<15x7xf32> into tensor<3x5x7xf32>
  %slice = tensor.extract_slice %big[0, 2, 0] [3, 5, 7] [1, 1, 1] : tensor<3x9x7xf32> to tensor<3x5x7xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %slice : tensor<3x5x7xf32>, tensor<3x5x7xf32>) outs(%init : tensor<3x5x7xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<3x5x7xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e : tensor<3x5x7xf32>) outs(%init : tensor<3x5x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %s = arith.addf %in, %f : f32
    linalg.yield %s : f32
  } -> tensor<3x5x7xf32>
  %z = tensor.empty() : tensor<3x5xf32>
  %d = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<3x5x7xf32>) outs(%z : tensor<3x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<3x5xf32>
  return %a, %b, %c, %d : tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5xf32>
}
