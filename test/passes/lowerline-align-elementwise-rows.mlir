// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-align-elementwise-rows{vector-bits=512}))" \
// RUN:   --split-input-file | FileCheck %s
// Without a vector width (the default; the GPU pipeline) nothing changes.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-align-elementwise-rows))" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=OFF
// OFF-NOT: tensor.collapse_shape

// 64 rows of 50257 (= 29 x 1733): the reciprocal runs over 1733 rows of
// 1856 = 29 x 64 (whole tiles of four 16-lane vectors), both operands and
// the result reshaped through one dim; the rank-0 operand keeps its map.
// CHECK-LABEL: func.func @odd_rows_as_rows_of_whole_vectors(
// CHECK-SAME:      %[[X:.+]]: tensor<64x50257xf32>)
// CHECK:         %[[XF:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1]] : tensor<64x50257xf32> into tensor<3216448xf32>
// CHECK:         %[[XR:.+]] = tensor.expand_shape %[[XF]] {{\[}}[0, 1]] output_shape [1733, 1856]
// CHECK:         %[[Y:.+]] = linalg.generic {indexing_maps = [#[[SCALAR:.+]], #[[ID:.+]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.+}}, %[[XR]] : tensor<f32>, tensor<1733x1856xf32>)
// CHECK:           arith.divf
// CHECK:         %[[YF:.+]] = tensor.collapse_shape %[[Y]] {{\[}}[0, 1]] : tensor<1733x1856xf32> into tensor<3216448xf32>
// CHECK:         %[[R:.+]] = tensor.expand_shape %[[YF]] {{\[}}[0, 1]] output_shape [64, 50257]
// CHECK-NEXT:    return %[[R]]
#scalar = affine_map<(d0, d1) -> ()>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @odd_rows_as_rows_of_whole_vectors(%x: tensor<64x50257xf32>) -> tensor<64x50257xf32> {
  %one = arith.constant dense<1.0> : tensor<f32>
  %init = tensor.empty() : tensor<64x50257xf32>
  %r = linalg.generic {indexing_maps = [#scalar, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%one, %x : tensor<f32>, tensor<64x50257xf32>) outs(%init : tensor<64x50257xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %v = arith.divf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<64x50257xf32>
  return %r : tensor<64x50257xf32>
}

// -----

// Left alone: rows already of whole vectors (4096), an element count with
// no divisor of whole tiles (3 x 17), a result read by another op (it may
// fuse with it), a broadcast operand (a bias over the columns), and a
// reduction.
// CHECK-LABEL: func.func @not_aligned(
// CHECK-NOT:     tensor.collapse_shape
// CHECK-NOT:     tensor.expand_shape
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @not_aligned(%a: tensor<16x4096xf32>, %b: tensor<3x17xf32>, %c: tensor<64x50257xf32>,
                       %bias: tensor<50257xf32>)
    -> (tensor<16x4096xf32>, tensor<3x17xf32>, tensor<64xf32>, tensor<64x50257xf32>) {
  %ia = tensor.empty() : tensor<16x4096xf32>
  %ra = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x4096xf32>) outs(%ia : tensor<16x4096xf32>) {
  ^bb0(%x: f32, %out: f32):
    %v = math.exp %x : f32
    linalg.yield %v : f32
  } -> tensor<16x4096xf32>
  %ib = tensor.empty() : tensor<3x17xf32>
  %rb = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<3x17xf32>) outs(%ib : tensor<3x17xf32>) {
  ^bb0(%x: f32, %out: f32):
    %v = math.exp %x : f32
    linalg.yield %v : f32
  } -> tensor<3x17xf32>
  %ic = tensor.empty() : tensor<64x50257xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<64x50257xf32>) outs(%ic : tensor<64x50257xf32>) {
  ^bb0(%x: f32, %out: f32):
    %v = math.exp %x : f32
    linalg.yield %v : f32
  } -> tensor<64x50257xf32>
  %zero = arith.constant 0.0 : f32
  %is = tensor.empty() : tensor<64xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%is : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<64x50257xf32>) outs(%fill : tensor<64xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %v = arith.addf %x, %acc : f32
    linalg.yield %v : f32
  } -> tensor<64xf32>
  %rd = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : tensor<64x50257xf32>, tensor<50257xf32>) outs(%ic : tensor<64x50257xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %v = arith.addf %x, %y : f32
    linalg.yield %v : f32
  } -> tensor<64x50257xf32>
  return %ra, %rb, %s, %rd : tensor<16x4096xf32>, tensor<3x17xf32>, tensor<64xf32>, tensor<64x50257xf32>
}
