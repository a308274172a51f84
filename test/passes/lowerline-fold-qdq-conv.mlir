// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fold-qdq-conv))" \
// RUN:   --split-input-file | FileCheck %s

// A strided convolution as torch-mlir lowers a PT2E Conv2d: u8 activation
// (zero point 130, scale 0.5), s8 weight per output channel (scales 1/4,
// 1/8), bias broadcast into the init, ReLU, u8 output (scale 1/4, zero
// point 3). Folded: x - 128 as s8, an i8 x i8 -> i32 convolution with the
// same strides, one epilogue per output channel (dim 1).
// c[f] = -(130 - 128) * sum(w[f]) + bias[f] / (0.5 * sw[f]) = [-12 + 8, 0 - 32];
// m[f] = 0.5 * sw[f] / 0.25.
// CHECK-LABEL: func.func @folds_strided_per_channel_bias_relu_requantize(
// CHECK-SAME:      %[[XQ:.+]]: tensor<1x1x4x4xi8>
// CHECK:         %[[XS:.+]] = linalg.generic {{.*}} ins(%[[XQ]] : tensor<1x1x4x4xi8>)
// CHECK:           arith.xori
// CHECK:         %[[W:.+]] = arith.constant dense_resource<{{.+}}> : tensor<2x1x2x2xi8>
// CHECK:         %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : i32) outs(%{{.+}} : tensor<1x2x2x2xi32>)
// CHECK:         %[[ACC:.+]] = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%[[XS]], %[[W]] : tensor<1x1x4x4xi8>, tensor<2x1x2x2xi8>) outs(%[[ZERO]] : tensor<1x2x2x2xi32>)
// CHECK:         %[[C:.+]] = arith.constant dense<[-4, -32]> : tensor<2xi32>
// CHECK:         %[[M:.+]] = arith.constant dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK:         %[[Q:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #[[CH:.+]], #[[CH]], #{{.+}}], {{.*}} ins(%[[ACC]], %[[C]], %[[M]] : tensor<1x2x2x2xi32>, tensor<2xi32>, tensor<2xf32>)
// CHECK:           arith.addi
// The ReLU is the quantize's clamp from the zero point up: no max before rounding.
// CHECK-NOT:       arith.maximumf
// CHECK:           math.roundeven
// CHECK:           arith.fptoui {{.+}} : f32 to i8
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         return %[[Q]] : tensor<1x2x2x2xi8>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch0 = affine_map<(d0, d1, d2, d3) -> (d0)>
func.func @folds_strided_per_channel_bias_relu_requantize(%xq: tensor<1x1x4x4xi8>) -> tensor<1x2x2x2xi8> {
  %zx = arith.constant 130 : i64
  %f0 = arith.constant 0.000000e+00 : f32
  %f3 = arith.constant 3.000000e+00 : f32
  %f255 = arith.constant 2.550000e+02 : f32
  %sx = arith.constant 0.5 : f32
  %sy = arith.constant 0.25 : f32
  %w = arith.constant dense<[[[[1, -2], [3, 4]]], [[[-5, 6], [7, -8]]]]> : tensor<2x1x2x2xi8>
  %sw = arith.constant dense<[0.25, 0.125]> : tensor<2xf32>
  %zw = arith.constant dense<0> : tensor<2xi64>
  %bias = arith.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %e0 = tensor.empty() : tensor<2x1x2x2xf32>
  %wd = linalg.generic {indexing_maps = [#id, #ch0, #ch0, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w, %sw, %zw : tensor<2x1x2x2xi8>, tensor<2xf32>, tensor<2xi64>) outs(%e0 : tensor<2x1x2x2xf32>) {
  ^bb0(%in: i8, %s: f32, %z: i64, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %z : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %s : f32
    linalg.yield %3 : f32
  } -> tensor<2x1x2x2xf32>
  %e1 = tensor.empty() : tensor<1x1x4x4xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xq : tensor<1x1x4x4xi8>) outs(%e1 : tensor<1x1x4x4xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extui %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<1x1x4x4xf32>
  %e2 = tensor.empty() : tensor<1x2x2x2xf32>
  %b = linalg.broadcast ins(%bias : tensor<2xf32>) outs(%e2 : tensor<1x2x2x2xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%xd, %wd : tensor<1x1x4x4xf32>, tensor<2x1x2x2xf32>) outs(%b : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x2x2x2xf32>) outs(%e2 : tensor<1x2x2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.cmpf ugt, %in, %f0 : f32
    %1 = arith.select %0, %in, %f0 : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x2x2xf32>
  %e3 = tensor.empty() : tensor<1x2x2x2xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r : tensor<1x2x2x2xf32>) outs(%e3 : tensor<1x2x2x2xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %sy : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %f3 : f32
    %3 = arith.maximumf %2, %f0 : f32
    %4 = arith.minimumf %3, %f255 : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<1x2x2x2xi8>
  return %q : tensor<1x2x2x2xi8>
}

// -----

// A grouped convolution (2 groups of 2 channels) between torch-mlir's
// expand_shapes and collapse_shape, s8 activation (zero point -1, scale
// 0.5), weight per tensor (scale 1/4, zero point 1: stored as w - 1), no
// bias, a float result: the epilogue runs on the (n, g, f, h, w)
// accumulator with per-channel constants shaped (g, f), then collapses.
// w - 1 = [[0, 1], [2, -1], [0, 0], [-2, 4]], so c = -(-1) * sums = [1, 1, 0, 2].
// CHECK-LABEL: func.func @folds_grouped_float_result(
// CHECK-SAME:      %[[XQ:.+]]: tensor<1x4x3x3xi8>
// CHECK-NOT:     arith.xori
// CHECK:         %[[X5:.+]] = tensor.expand_shape %[[XQ]] {{.+}} into tensor<1x2x2x3x3xi8>
// CHECK:         %[[W:.+]] = arith.constant dense_resource<{{.+}}> : tensor<2x2x2x1x1xi8>
// CHECK:         %[[ACC:.+]] = linalg.conv_2d_ngchw_gfchw {{.+}} ins(%[[X5]], %[[W]] : tensor<1x2x2x3x3xi8>, tensor<2x2x2x1x1xi8>) outs(%{{.+}} : tensor<1x2x2x3x3xi32>)
// CHECK:         %[[C:.+]] = arith.constant dense<[1, 1, 0, 2]> : tensor<4xi32>
// CHECK:         %[[C2:.+]] = tensor.expand_shape %[[C]] {{.+}} into tensor<2x2xi32>
// CHECK:         %[[Y:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %[[C2]], %{{.+}} : tensor<1x2x2x3x3xi32>, tensor<2x2xi32>, tensor<2x2xf32>)
// CHECK:           %[[REAL:.+]] = arith.mulf
// CHECK-NEXT:      linalg.yield %[[REAL]] : f32
// CHECK:         %[[OUT:.+]] = tensor.collapse_shape %[[Y]] {{.+}} into tensor<1x4x3x3xf32>
// CHECK:         return %[[OUT]] : tensor<1x4x3x3xf32>
// CHECK:       dialect_resources
// CHECK:         "0x40000000000102FF0000FE04"
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @folds_grouped_float_result(%xq: tensor<1x4x3x3xi8>) -> tensor<1x4x3x3xf32> {
  %zx = arith.constant -1 : i64
  %zw = arith.constant 1 : i64
  %f0 = arith.constant 0.000000e+00 : f32
  %sx = arith.constant 0.5 : f32
  %sw = arith.constant 0.25 : f32
  %w = arith.constant dense<[[[[1]], [[2]]], [[[3]], [[0]]], [[[1]], [[1]]], [[[-1]], [[5]]]]> : tensor<4x2x1x1xi8>
  %e0 = tensor.empty() : tensor<4x2x1x1xf32>
  %wd = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w : tensor<4x2x1x1xi8>) outs(%e0 : tensor<4x2x1x1xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zw : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sw : f32
    linalg.yield %3 : f32
  } -> tensor<4x2x1x1xf32>
  %x5 = tensor.expand_shape %xq [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 3, 3] : tensor<1x4x3x3xi8> into tensor<1x2x2x3x3xi8>
  %e1 = tensor.empty() : tensor<1x2x2x3x3xf32>
  %xd = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x5 : tensor<1x2x2x3x3xi8>) outs(%e1 : tensor<1x2x2x3x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<1x2x2x3x3xf32>
  %w5 = tensor.expand_shape %wd [[0, 1], [2], [3], [4]] output_shape [2, 2, 2, 1, 1] : tensor<4x2x1x1xf32> into tensor<2x2x2x1x1xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e1 : tensor<1x2x2x3x3xf32>) -> tensor<1x2x2x3x3xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xd, %w5 : tensor<1x2x2x3x3xf32>, tensor<2x2x2x1x1xf32>) outs(%fill : tensor<1x2x2x3x3xf32>) -> tensor<1x2x2x3x3xf32>
  %y = tensor.collapse_shape %c [[0], [1, 2], [3], [4]] : tensor<1x2x2x3x3xf32> into tensor<1x4x3x3xf32>
  return %y : tensor<1x4x3x3xf32>
}

// -----

// Not folded: the weight is an argument, not a constant (no weight sums at
// compile time).
// CHECK-LABEL: func.func @weight_not_constant_is_not_folded(
// CHECK:         linalg.depthwise_conv_2d_nchw_chw {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x2x3x3xf32>, tensor<2x2x2xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @weight_not_constant_is_not_folded(%xq: tensor<1x2x3x3xi8>, %w: tensor<2x2x2xi8>) -> tensor<1x2x2x2xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %s = arith.constant 0.5 : f32
  %e0 = tensor.empty() : tensor<2x2x2xf32>
  %wd = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<2x2x2xi8>) outs(%e0 : tensor<2x2x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x2xf32>
  %e1 = tensor.empty() : tensor<1x2x3x3xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xq : tensor<1x2x3x3xi8>) outs(%e1 : tensor<1x2x3x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x3x3xf32>
  %e2 = tensor.empty() : tensor<1x2x2x2xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xd, %wd : tensor<1x2x3x3xf32>, tensor<2x2x2xf32>) outs(%fill : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %c : tensor<1x2x2x2xf32>
}

// -----

// Not folded: the activation is padded with 0.0 after the dequantize (the
// sink pass, not run here, moves the pad onto the integers first).
// CHECK-LABEL: func.func @float_pad_is_not_folded(
// CHECK:         tensor.pad
// CHECK:         linalg.depthwise_conv_2d_nchw_chw {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x2x5x5xf32>, tensor<2x2x2xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @float_pad_is_not_folded(%xq: tensor<1x2x3x3xi8>) -> tensor<1x2x4x4xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %s = arith.constant 0.5 : f32
  %w = arith.constant dense<1> : tensor<2x2x2xi8>
  %e0 = tensor.empty() : tensor<2x2x2xf32>
  %wd = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<2x2x2xi8>) outs(%e0 : tensor<2x2x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x2xf32>
  %e1 = tensor.empty() : tensor<1x2x3x3xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xq : tensor<1x2x3x3xi8>) outs(%e1 : tensor<1x2x3x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x3x3xf32>
  %padded = tensor.pad %xd low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %f0 : f32
  } : tensor<1x2x3x3xf32> to tensor<1x2x5x5xf32>
  %e2 = tensor.empty() : tensor<1x2x4x4xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %wd : tensor<1x2x5x5xf32>, tensor<2x2x2xf32>) outs(%fill : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %c : tensor<1x2x4x4xf32>
}

// -----

// Not folded: the weight's scales run along its input channels (dim 1),
// which no per-output-channel constant can factor out; and a weight zero
// point of -100 would take w - zw out of int8 (second convolution).
// CHECK-LABEL: func.func @input_channel_scales_and_wide_zero_point_are_not_folded(
// CHECK:         linalg.conv_2d_nchw_fchw {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>)
// CHECK:         linalg.conv_2d_nchw_fchw {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch1 = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @input_channel_scales_and_wide_zero_point_are_not_folded(%xq: tensor<1x2x3x3xi8>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %f0 = arith.constant 0.000000e+00 : f32
  %s = arith.constant 0.5 : f32
  %zw = arith.constant -100 : i64
  %w = arith.constant dense<[[[[100]], [[2]]], [[[3]], [[4]]]]> : tensor<2x2x1x1xi8>
  %sw = arith.constant dense<[0.25, 0.5]> : tensor<2xf32>
  %e0 = tensor.empty() : tensor<2x2x1x1xf32>
  %wd = linalg.generic {indexing_maps = [#id, #ch1, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w, %sw : tensor<2x2x1x1xi8>, tensor<2xf32>) outs(%e0 : tensor<2x2x1x1xf32>) {
  ^bb0(%in: i8, %sc: f32, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %sc : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x1x1xf32>
  %wz = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w : tensor<2x2x1x1xi8>) outs(%e0 : tensor<2x2x1x1xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zw : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %s : f32
    linalg.yield %3 : f32
  } -> tensor<2x2x1x1xf32>
  %e1 = tensor.empty() : tensor<1x2x3x3xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xq : tensor<1x2x3x3xi8>) outs(%e1 : tensor<1x2x3x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x2x3x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e1 : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xd, %wd : tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) outs(%fill : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %d = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xd, %wz : tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) outs(%fill : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %c, %d : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
