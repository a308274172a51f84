// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-pointwise-conv-rows),canonicalize)" \
// RUN:   --split-input-file | FileCheck %s

// A 1x1 convolution over 5x3 planes works on rows of 15 columns; its bias
// broadcast is rebuilt in that shape, and the epilogue (a per-channel scale,
// a residual add of another 2x4x5x3 tensor) follows it; the result is viewed
// as planes again at the end.
// CHECK-LABEL: func.func @conv_and_epilogue_as_rows(
// CHECK-SAME:      %[[X:.+]]: tensor<2x3x5x3xf32>, %[[W:.+]]: tensor<4x3x1x1xf32>, %[[B:.+]]: tensor<4xf32>, %[[S:.+]]: tensor<4xf32>, %[[R:.+]]: tensor<2x4x5x3xf32>
// CHECK:         %[[XF:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0], [1], [2, 3]] : tensor<2x3x5x3xf32> into tensor<2x3x15xf32>
// CHECK:         %[[XR:.+]] = tensor.expand_shape %[[XF]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 3, 1, 15]
// CHECK:         %[[BIAS:.+]] = linalg.broadcast ins(%[[B]] : tensor<4xf32>) outs({{.*}} : tensor<2x4x1x15xf32>) dimensions = [0, 2, 3]
// CHECK:         %[[CONV:.+]] = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[XR]], %[[W]] : tensor<2x3x1x15xf32>, tensor<4x3x1x1xf32>) outs(%[[BIAS]] : tensor<2x4x1x15xf32>)
// CHECK:         %[[RR:.+]] = tensor.expand_shape {{.*}} output_shape [2, 4, 1, 15]
// CHECK:         %[[EPI:.+]] = linalg.generic {{.*}} ins(%[[CONV]], %[[S]], %[[RR]] : tensor<2x4x1x15xf32>, tensor<4xf32>, tensor<2x4x1x15xf32>) outs({{.*}} : tensor<2x4x1x15xf32>)
// CHECK:         %[[FLAT:.+]] = tensor.collapse_shape %[[EPI]] {{\[\[}}0], [1], [2, 3]] : tensor<2x4x1x15xf32> into tensor<2x4x15xf32>
// CHECK:         %[[OUT:.+]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 4, 5, 3]
// CHECK:         return %[[OUT]]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @conv_and_epilogue_as_rows(%x: tensor<2x3x5x3xf32>, %w: tensor<4x3x1x1xf32>, %b: tensor<4xf32>, %s: tensor<4xf32>, %r: tensor<2x4x5x3xf32>) -> tensor<2x4x5x3xf32> {
  %e = tensor.empty() : tensor<2x4x5x3xf32>
  %bias = linalg.broadcast ins(%b : tensor<4xf32>) outs(%e : tensor<2x4x5x3xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x3x5x3xf32>, tensor<4x3x1x1xf32>) outs(%bias : tensor<2x4x5x3xf32>) -> tensor<2x4x5x3xf32>
  %y = linalg.generic {indexing_maps = [#id, #chan, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c, %s, %r : tensor<2x4x5x3xf32>, tensor<4xf32>, tensor<2x4x5x3xf32>) outs(%e : tensor<2x4x5x3xf32>) {
  ^bb0(%in: f32, %scale: f32, %res: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    %a = arith.addf %m, %res : f32
    linalg.yield %a : f32
  } -> tensor<2x4x5x3xf32>
  return %y : tensor<2x4x5x3xf32>
}

// -----

// A dynamic batch is kept dynamic; a fill init is rebuilt; without an
// elementwise consumer the result is viewed as planes right away.
// CHECK-LABEL: func.func @dynamic_batch(
// CHECK:         %[[FILL:.+]] = linalg.fill {{.*}} -> tensor<?x8x1x49xf32>
// CHECK:         %[[CONV:.+]] = linalg.conv_2d_nchw_fchw {{.*}} ins({{.*}} : tensor<?x4x1x49xf32>, tensor<8x4x1x1xf32>) outs(%[[FILL]] : tensor<?x8x1x49xf32>)
// CHECK:         tensor.expand_shape {{.*}} output_shape [%{{.+}}, 8, 7, 7] : tensor<?x8x49xf32> into tensor<?x8x7x7xf32>
func.func @dynamic_batch(%x: tensor<?x4x7x7xf32>, %w: tensor<8x4x1x1xf32>) -> tensor<?x8x7x7xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x4x7x7xf32>
  %e = tensor.empty(%n) : tensor<?x8x7x7xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8x7x7xf32>) -> tensor<?x8x7x7xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x4x7x7xf32>, tensor<8x4x1x1xf32>) outs(%fill : tensor<?x8x7x7xf32>) -> tensor<?x8x7x7xf32>
  return %c : tensor<?x8x7x7xf32>
}

// -----

// Not firing: a 3x3 window reads across rows, a stride-2 1x1 convolution
// skips columns; both stay as they are.
// CHECK-LABEL: func.func @windows_and_strides_stay(
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} ins({{.*}} : tensor<1x4x9x9xf32>, tensor<8x4x3x3xf32>) outs({{.*}} : tensor<1x8x7x7xf32>)
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} ins({{.*}} : tensor<1x4x9x9xf32>, tensor<8x4x1x1xf32>) outs({{.*}} : tensor<1x8x5x5xf32>)
// CHECK-NOT:     tensor.collapse_shape
// CHECK-NOT:     tensor.expand_shape
func.func @windows_and_strides_stay(%x: tensor<1x4x9x9xf32>, %w3: tensor<8x4x3x3xf32>, %w1: tensor<8x4x1x1xf32>) -> (tensor<1x8x7x7xf32>, tensor<1x8x5x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x7x7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32>
  %a = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w3 : tensor<1x4x9x9xf32>, tensor<8x4x3x3xf32>) outs(%f : tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32>
  %e2 = tensor.empty() : tensor<1x8x5x5xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x8x5x5xf32>) -> tensor<1x8x5x5xf32>
  %b = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w1 : tensor<1x4x9x9xf32>, tensor<8x4x1x1xf32>) outs(%f2 : tensor<1x8x5x5xf32>) -> tensor<1x8x5x5xf32>
  return %a, %b : tensor<1x8x7x7xf32>, tensor<1x8x5x5xf32>
}

// -----

// The chain stops at a consumer that reads the plane transposed (h and w
// swapped): the convolution still works on rows, the transposing generic
// reads it as planes.
// CHECK-LABEL: func.func @chain_stops_at_transposed_read(
// CHECK:         %[[CONV:.+]] = linalg.conv_2d_nchw_fchw {{.*}} -> tensor<1x2x1x12xf32>
// CHECK:         %[[PLANE:.+]] = tensor.expand_shape {{.*}} output_shape [1, 2, 3, 4] : tensor<1x2x12xf32> into tensor<1x2x3x4xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[PLANE]] : tensor<1x2x3x4xf32>) outs({{.*}} : tensor<1x2x4x3xf32>)
#swap_in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @chain_stops_at_transposed_read(%x: tensor<1x2x3x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x3x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x3x4xf32>, tensor<2x2x1x1xf32>) outs(%f : tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %e2 = tensor.empty() : tensor<1x2x4x3xf32>
  %t = linalg.generic {indexing_maps = [#swap_in, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<1x2x3x4xf32>) outs(%e2 : tensor<1x2x4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x2x4x3xf32>
  return %t : tensor<1x2x4x3xf32>
}
