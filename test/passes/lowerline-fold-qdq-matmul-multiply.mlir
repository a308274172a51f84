// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fold-qdq-matmul))" \
// RUN:   --split-input-file | FileCheck %s

// The frontend's quantize (lowerline.frontend.quantize_multiply): torch's
// x * f32(1 / scale), marked with its scale (1/3 here, inverse 3.0). The
// requantize folds, and its multiplier is sx * sw * inverse = 0.5 * 0.5 * 3
// = 0.75 exactly (the division's sx * sw / f32(1/3) is 0.74999994); the
// output zero point 2 and the s8 clamp stay. c[n] = 3 * sum_k w[k, n].
// CHECK-LABEL: func.func @folds_marked_multiply_requantize(
// CHECK-SAME:      %[[XQ:.+]]: tensor<2x2xi8>
// CHECK:         %[[ACC:.+]] = linalg.matmul ins(%[[XQ]], %{{.+}} : tensor<2x2xi8>, tensor<2x3xi8>) outs(%{{.+}} : tensor<2x3xi32>)
// CHECK:         %[[C:.+]] = arith.constant dense<[12, 18, 3]> : tensor<3xi32>
// CHECK:         %[[M:.+]] = arith.constant dense<7.500000e-01> : tensor<3xf32>
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %[[C]], %[[M]] : tensor<2x3xi32>, tensor<3xi32>, tensor<3xf32>)
// CHECK:           arith.mulf
// CHECK:           math.roundeven
// CHECK:           arith.fptosi {{.+}} : f32 to i8
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[Q]] : tensor<2x3xi8>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @folds_marked_multiply_requantize(%xq: tensor<2x2xi8>) -> tensor<2x3xi8> {
  %zx = arith.constant -3 : i64
  %f0 = arith.constant 0.000000e+00 : f32
  %f2 = arith.constant 2.000000e+00 : f32
  %lo = arith.constant -1.280000e+02 : f32
  %hi = arith.constant 1.270000e+02 : f32
  %sx = arith.constant 0.5 : f32
  %sw = arith.constant 0.5 : f32
  %inv = arith.constant 3.0 : f32
  %w = arith.constant dense<[[1, 2, 0], [3, 4, 1]]> : tensor<2x3xi8>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %wd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<2x3xi8>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.sitofp %0 : i64 to f32
    %2 = arith.mulf %1, %sw : f32
    linalg.yield %2 : f32
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
  %e3 = tensor.empty() : tensor<2x3xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<2x3xf32>) outs(%e3 : tensor<2x3xi8>) attrs = {lowerline.quantize = 0.3333333432674408 : f64} {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.mulf %in, %inv : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %f2 : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<2x3xi8>
  return %q : tensor<2x3xi8>
}

// -----

// The same IR without the mark is a user's own round(x * 3.0) + 2, not taken
// for a quantize: the matmul folds with a float result (sx * sw = 0.25) and
// the user's generic stays as it is.
// CHECK-LABEL: func.func @keeps_unmarked_multiply(
// CHECK:         %[[S:.+]] = arith.constant dense<2.500000e-01> : tensor<3xf32>
// CHECK:         %[[REAL:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<2x3xf32>)
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[REAL]] : tensor<2x3xf32>)
// CHECK-NOT:       lowerline.quantize
// CHECK:           arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT:      math.roundeven
// CHECK:         return %[[Q]] : tensor<2x3xi8>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @keeps_unmarked_multiply(%xq: tensor<2x2xi8>) -> tensor<2x3xi8> {
  %zx = arith.constant -3 : i64
  %f0 = arith.constant 0.000000e+00 : f32
  %f2 = arith.constant 2.000000e+00 : f32
  %lo = arith.constant -1.280000e+02 : f32
  %hi = arith.constant 1.270000e+02 : f32
  %sx = arith.constant 0.5 : f32
  %sw = arith.constant 0.5 : f32
  %inv = arith.constant 3.0 : f32
  %w = arith.constant dense<[[1, 2, 0], [3, 4, 1]]> : tensor<2x3xi8>
  %e0 = tensor.empty() : tensor<2x3xf32>
  %wd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<2x3xi8>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.sitofp %0 : i64 to f32
    %2 = arith.mulf %1, %sw : f32
    linalg.yield %2 : f32
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
  %e3 = tensor.empty() : tensor<2x3xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<2x3xf32>) outs(%e3 : tensor<2x3xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.mulf %in, %inv : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %f2 : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<2x3xi8>
  return %q : tensor<2x3xi8>
}
