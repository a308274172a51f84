// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fold-qdq-matmul))" \
// RUN:   --split-input-file | FileCheck %s

// The IR is torch-mlir's lowering of a PT2E linear layer (torchao's
// convert_pt2e with X86InductorQuantizer): u8 activation with zero point 131
// and scale 0.5, s8 weight quantized per output channel (scales 1/8, 1/4,
// 1/16), bias, ReLU, u8 output with scale 1/4.
// Folded: x - 128 as s8 (xori), an i8 x i8 -> i32 matmul on the transposed
// weight, and one epilogue. c[n] = -(131 - 128) * sum_k w[n, k]
// + bias[n] / (0.5 * sw[n]) = [6 + 8, -36 - 8, 0 + 64]; m[n] = 0.5 * sw[n] / 0.25.
// CHECK-LABEL: func.func @folds_per_channel_bias_relu_requantize(
// CHECK-SAME:      %[[XQ:.+]]: tensor<5x4xi8>
// CHECK:         %[[FLIP:.+]] = arith.constant -128 : i8
// CHECK:         %[[XS:.+]] = linalg.generic {{.*}} ins(%[[XQ]] : tensor<5x4xi8>)
// CHECK:           arith.xori %{{.+}}, %[[FLIP]] : i8
// CHECK:         %[[W:.+]] = arith.constant dense_resource<{{.+}}> : tensor<4x3xi8>
// CHECK:         %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : i32) outs(%{{.+}} : tensor<5x3xi32>)
// CHECK:         %[[ACC:.+]] = linalg.matmul ins(%[[XS]], %[[W]] : tensor<5x4xi8>, tensor<4x3xi8>) outs(%[[ZERO]] : tensor<5x3xi32>)
// CHECK:         %[[C:.+]] = arith.constant dense<[14, -44, 64]> : tensor<3xi32>
// CHECK:         %[[M:.+]] = arith.constant dense<[2.500000e-01, 5.000000e-01, 1.250000e-01]> : tensor<3xf32>
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %[[C]], %[[M]] : tensor<5x3xi32>, tensor<3xi32>, tensor<3xf32>)
// CHECK:           arith.addi
// CHECK:           arith.sitofp
// CHECK:           arith.mulf
// The ReLU is the quantize's clamp from the zero point up: no max before rounding.
// CHECK-NOT:       arith.maximumf
// CHECK:           math.roundeven
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK:           arith.minimumf
// CHECK:           arith.fptoui {{.+}} : f32 to i8
// CHECK-NOT:     linalg.transpose
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[Q]] : tensor<5x3xi8>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @folds_per_channel_bias_relu_requantize(%xq: tensor<5x4xi8>) -> tensor<5x3xi8> {
  %zx = arith.constant 131 : i64
  %f0 = arith.constant 0.000000e+00 : f32
  %f255 = arith.constant 2.550000e+02 : f32
  %sx = arith.constant 0.5 : f32
  %sy = arith.constant 0.25 : f32
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, -12]]> : tensor<3x4xi8>
  %sw = arith.constant dense<[0.125, 0.25, 0.0625]> : tensor<3xf32>
  %zw = arith.constant dense<0> : tensor<3xi64>
  %bias = arith.constant dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
  %e0 = tensor.empty() : tensor<3x4xf32>
  %wd = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%w, %sw, %zw : tensor<3x4xi8>, tensor<3xf32>, tensor<3xi64>) outs(%e0 : tensor<3x4xf32>) {
  ^bb0(%in: i8, %s: f32, %z: i64, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %z : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %s : f32
    linalg.yield %3 : f32
  } -> tensor<3x4xf32>
  %e2 = tensor.empty() : tensor<5x4xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xq : tensor<5x4xi8>) outs(%e2 : tensor<5x4xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extui %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<5x4xf32>
  %e3 = tensor.empty() : tensor<4x3xf32>
  %wt = linalg.transpose ins(%wd : tensor<3x4xf32>) outs(%e3 : tensor<4x3xf32>) permutation = [1, 0]
  %e4 = tensor.empty() : tensor<5x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e4 : tensor<5x3xf32>) -> tensor<5x3xf32>
  %mm = linalg.matmul ins(%xd, %wt : tensor<5x4xf32>, tensor<4x3xf32>) outs(%fill : tensor<5x3xf32>) -> tensor<5x3xf32>
  %b = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<5x3xf32>, tensor<3xf32>) outs(%e4 : tensor<5x3xf32>) {
  ^bb0(%in: f32, %in1: f32, %out: f32):
    %0 = arith.addf %in, %in1 : f32
    linalg.yield %0 : f32
  } -> tensor<5x3xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<5x3xf32>) outs(%e4 : tensor<5x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.cmpf ugt, %in, %f0 : f32
    %1 = arith.select %0, %in, %f0 : f32
    linalg.yield %1 : f32
  } -> tensor<5x3xf32>
  %e5 = tensor.empty() : tensor<5x3xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<5x3xf32>) outs(%e5 : tensor<5x3xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %sy : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %f0 : f32
    %3 = arith.maximumf %2, %f0 : f32
    %4 = arith.minimumf %3, %f255 : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<5x3xi8>
  return %q : tensor<5x3xi8>
}

// -----

// Per tensor, an s8 activation (no shift), a K x N weight read without a
// transpose and with a zero point of 2 (folded into the weight: w - 2), no
// bias, no ReLU, and a float result (a model's last layer): the epilogue
// scales by sx * sw = 0.5 * 0.25. c[n] = -(-3) * sum_k (w[k, n] - 2) = 3 * [0, 2, -3],
// the weight's bytes are w - 2 = [[-1, 0, -2], [1, 2, -1]].
// CHECK-LABEL: func.func @folds_per_tensor_float_result(
// CHECK-SAME:      %[[XQ:.+]]: tensor<2x2xi8>
// CHECK-NOT:     arith.xori
// CHECK:         %[[W:.+]] = arith.constant dense_resource<{{.+}}> : tensor<2x3xi8>
// CHECK:         %[[ACC:.+]] = linalg.matmul ins(%[[XQ]], %[[W]] : tensor<2x2xi8>, tensor<2x3xi8>) outs(%{{.+}} : tensor<2x3xi32>)
// CHECK:         %[[C:.+]] = arith.constant dense<[0, 6, -9]> : tensor<3xi32>
// CHECK:         %[[S:.+]] = arith.constant dense<1.250000e-01> : tensor<3xf32>
// CHECK:         %[[Y:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %[[C]], %[[S]] : tensor<2x3xi32>, tensor<3xi32>, tensor<3xf32>)
// CHECK:           arith.addi
// CHECK:           arith.sitofp
// CHECK:           %[[REAL:.+]] = arith.mulf
// CHECK-NEXT:      linalg.yield %[[REAL]] : f32
// CHECK:         return %[[Y]] : tensor<2x3xf32>
// CHECK:       dialect_resources
// CHECK:         "0x40000000FF00FE0102FF"
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @folds_per_tensor_float_result(%xq: tensor<2x2xi8>) -> tensor<2x3xf32> {
  %zx = arith.constant -3 : i64
  %zw = arith.constant 2 : i64
  %f0 = arith.constant 0.000000e+00 : f32
  %sx = arith.constant 0.5 : f32
  %sw = arith.constant 0.25 : f32
  %w = arith.constant dense<[[1, 2, 0], [3, 4, 1]]> : tensor<2x3xi8>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %wd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<2x3xi8>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zw : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sw : f32
    linalg.yield %3 : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x2xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xq : tensor<2x2xi8>) outs(%e1 : tensor<2x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%xd, %wd : tensor<2x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %mm : tensor<2x3xf32>
}

// -----

// Not folded: a float op (negf) between the dequantize and the matmul.
// CHECK-LABEL: func.func @keeps_float_op_between(
// CHECK:         arith.negf
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK-NOT:     xi32>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @keeps_float_op_between(%xq: tensor<2x2xi8>) -> tensor<2x3xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %sx = arith.constant 0.5 : f32
  %sw = arith.constant 0.25 : f32
  %w = arith.constant dense<[[1, 2, 0], [3, 4, 1]]> : tensor<2x3xi8>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %wd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<2x3xi8>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %sw : f32
    linalg.yield %1 : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x2xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xq : tensor<2x2xi8>) outs(%e1 : tensor<2x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %sx : f32
    linalg.yield %1 : f32
  } -> tensor<2x2xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xd : tensor<2x2xf32>) outs(%e1 : tensor<2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%neg, %wd : tensor<2x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %mm : tensor<2x3xf32>
}

// -----

// Not folded: the weight's scales are a run-time argument, not constants.
// CHECK-LABEL: func.func @keeps_runtime_weight_scale(
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK-NOT:     xi32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @keeps_runtime_weight_scale(%xq: tensor<2x2xi8>, %sw: tensor<3xf32>) -> tensor<2x3xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %sx = arith.constant 0.5 : f32
  %w = arith.constant dense<[[1, 2, 0], [3, 4, 1]]> : tensor<2x3xi8>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %wd = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%w, %sw : tensor<2x3xi8>, tensor<3xf32>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%in: i8, %s: f32, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x2xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xq : tensor<2x2xi8>) outs(%e1 : tensor<2x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %sx : f32
    linalg.yield %1 : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%xd, %wd : tensor<2x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %mm : tensor<2x3xf32>
}

// -----

// Not folded: the weight's scales run along its columns (N) but its zero
// points along its rows (K); a zero point per k cannot leave the sum.
// CHECK-LABEL: func.func @keeps_mismatched_zero_point_axis(
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK-NOT:     xi32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @keeps_mismatched_zero_point_axis(%xq: tensor<2x2xi8>) -> tensor<2x3xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %sx = arith.constant 0.5 : f32
  %sw = arith.constant dense<[0.25, 0.5, 0.125]> : tensor<3xf32>
  %zw = arith.constant dense<[1, -1]> : tensor<2xi64>
  %w = arith.constant dense<[[1, 2, 0], [3, 4, 1]]> : tensor<2x3xi8>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %wd = linalg.generic {indexing_maps = [#id, #col, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%w, %sw, %zw : tensor<2x3xi8>, tensor<3xf32>, tensor<2xi64>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%in: i8, %s: f32, %z: i64, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %z : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %s : f32
    linalg.yield %3 : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x2xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xq : tensor<2x2xi8>) outs(%e1 : tensor<2x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %sx : f32
    linalg.yield %1 : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%xd, %wd : tensor<2x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %mm : tensor<2x3xf32>
}

// -----

// Not folded: with a weight zero point of -125, w - zw reaches 129, outside int8.
// CHECK-LABEL: func.func @keeps_weight_zero_point_outside_int8(
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK-NOT:     xi32>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @keeps_weight_zero_point_outside_int8(%xq: tensor<2x2xi8>) -> tensor<2x3xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %sx = arith.constant 0.5 : f32
  %sw = arith.constant 0.25 : f32
  %zw = arith.constant -125 : i64
  %w = arith.constant dense<[[1, 2, 0], [3, 4, 1]]> : tensor<2x3xi8>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %wd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<2x3xi8>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zw : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sw : f32
    linalg.yield %3 : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x2xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xq : tensor<2x2xi8>) outs(%e1 : tensor<2x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %sx : f32
    linalg.yield %1 : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%xd, %wd : tensor<2x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %mm : tensor<2x3xf32>
}

// -----

// A Linear on (B, S, K) inputs: torch-mlir collapses the dequantized rows
// before the matmul and expands the result after the bias. The integers are
// collapsed instead, and the requantized result expanded.
// CHECK-LABEL: func.func @folds_through_collapse_and_expand(
// CHECK-SAME:      %[[XQ:.+]]: tensor<2x3x2xi8>
// CHECK:         %[[XS:.+]] = tensor.collapse_shape %[[XQ]] {{\[\[}}0, 1], [2]] : tensor<2x3x2xi8> into tensor<6x2xi8>
// CHECK:         %[[ACC:.+]] = linalg.matmul ins(%[[XS]], %{{.+}} : tensor<6x2xi8>, tensor<2x3xi8>)
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %{{.+}}, %{{.+}} : tensor<6x3xi32>, tensor<3xi32>, tensor<3xf32>) outs(%{{.+}} : tensor<6x3xi8>)
// CHECK:           arith.fptosi
// CHECK:         %[[Y:.+]] = tensor.expand_shape %[[Q]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 3] : tensor<6x3xi8> into tensor<2x3x3xi8>
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[Y]] : tensor<2x3x3xi8>
#id = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @folds_through_collapse_and_expand(%xq: tensor<2x3x2xi8>) -> tensor<2x3x3xi8> {
  %f0 = arith.constant 0.000000e+00 : f32
  %fmin = arith.constant -1.280000e+02 : f32
  %fmax = arith.constant 1.270000e+02 : f32
  %sx = arith.constant 0.5 : f32
  %sw = arith.constant 0.25 : f32
  %sy = arith.constant 0.125 : f32
  %w = arith.constant dense<[[1, 2, 0], [3, 4, 1]]> : tensor<2x3xi8>
  %bias = arith.constant dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %wd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<2x3xi8>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %sw : f32
    linalg.yield %1 : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<2x3x2xf32>
  %xd = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xq : tensor<2x3x2xi8>) outs(%e1 : tensor<2x3x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %sx : f32
    linalg.yield %1 : f32
  } -> tensor<2x3x2xf32>
  %rows = tensor.collapse_shape %xd [[0, 1], [2]] : tensor<2x3x2xf32> into tensor<6x2xf32>
  %e2 = tensor.empty() : tensor<6x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<6x3xf32>) -> tensor<6x3xf32>
  %mm = linalg.matmul ins(%rows, %wd : tensor<6x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<6x3xf32>) -> tensor<6x3xf32>
  %b = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<6x3xf32>, tensor<3xf32>) outs(%e2 : tensor<6x3xf32>) {
  ^bb0(%in: f32, %in1: f32, %out: f32):
    %0 = arith.addf %in, %in1 : f32
    linalg.yield %0 : f32
  } -> tensor<6x3xf32>
  %y = tensor.expand_shape %b [[0, 1], [2]] output_shape [2, 3, 3] : tensor<6x3xf32> into tensor<2x3x3xf32>
  %e3 = tensor.empty() : tensor<2x3x3xi8>
  %q = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x3x3xf32>) outs(%e3 : tensor<2x3x3xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %sy : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.maximumf %1, %fmin : f32
    %3 = arith.minimumf %2, %fmax : f32
    %4 = arith.fptosi %3 : f32 to i8
    linalg.yield %4 : i8
  } -> tensor<2x3x3xi8>
  return %q : tensor<2x3x3xi8>
}
