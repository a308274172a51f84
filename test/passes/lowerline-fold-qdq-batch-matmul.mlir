// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fold-qdq-batch-matmul))" \
// RUN:   --split-input-file | FileCheck %s

// Two dequantized activations: x u8 (zero point 130, scale 0.5: shifted to
// s8, zero point 2), y s8 (zero point -3, scale 0.25), ReLU, u8 output
// (scale 0.125). The integer batch matmul is corrected at run time:
// acc - (-3) * rows(x) - 2 * cols(y) + K * 2 * (-3), K = 4, scaled by
// 0.5 * 0.25 / 0.125 = 1.
// CHECK-LABEL: func.func @folds_both_zero_points_relu_requantize(
// CHECK-SAME:      %[[XQ:.+]]: tensor<2x3x4xi8>, %[[YQ:.+]]: tensor<2x4x5xi8>
// CHECK:         %[[XS:.+]] = linalg.generic {{.*}} ins(%[[XQ]] : tensor<2x3x4xi8>)
// CHECK:           arith.xori
// CHECK:         %[[ACC:.+]] = linalg.batch_matmul ins(%[[XS]], %[[YQ]] : tensor<2x3x4xi8>, tensor<2x4x5xi8>) outs(%{{.+}} : tensor<2x3x5xi32>)
// CHECK:         %[[ROWS:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[XS]] : tensor<2x3x4xi8>) outs(%{{.+}} : tensor<2x3xi32>)
// CHECK:         %[[COLS:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[YQ]] : tensor<2x4x5xi8>) outs(%{{.+}} : tensor<2x5xi32>)
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %[[ROWS]], %[[COLS]] : tensor<2x3x5xi32>, tensor<2x3xi32>, tensor<2x5xi32>)
// CHECK:           arith.constant -24 : i32
// CHECK:           arith.constant -3 : i32
// CHECK:           arith.muli
// CHECK:           arith.subi
// CHECK:           arith.constant 2 : i32
// CHECK:           arith.muli
// CHECK:           arith.subi
// CHECK:           arith.sitofp
// CHECK:           arith.constant 1.000000e+00 : f32
// The ReLU is the quantize's clamp from the zero point up: no max before rounding.
// CHECK-NOT:       arith.maximumf
// CHECK:           math.roundeven
// CHECK:           arith.fptoui {{.+}} : f32 to i8
// CHECK-NOT:     linalg.batch_matmul
// CHECK:         return %[[Q]] : tensor<2x3x5xi8>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @folds_both_zero_points_relu_requantize(%xq: tensor<2x3x4xi8>, %yq: tensor<2x4x5xi8>) -> tensor<2x3x5xi8> {
  %zx = arith.constant 130 : i64
  %zy = arith.constant -3 : i64
  %f0 = arith.constant 0.000000e+00 : f32
  %f255 = arith.constant 2.550000e+02 : f32
  %sx = arith.constant 0.5 : f32
  %sy = arith.constant 0.25 : f32
  %so = arith.constant 0.125 : f32
  %e0 = tensor.empty() : tensor<2x3x4xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xq : tensor<2x3x4xi8>) outs(%e0 : tensor<2x3x4xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extui %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<2x3x4xf32>
  %e1 = tensor.empty() : tensor<2x4x5xf32>
  %yd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%yq : tensor<2x4x5xi8>) outs(%e1 : tensor<2x4x5xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zy : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sy : f32
    linalg.yield %3 : f32
  } -> tensor<2x4x5xf32>
  %e2 = tensor.empty() : tensor<2x3x5xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %bm = linalg.batch_matmul ins(%xd, %yd : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%fill : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%bm : tensor<2x3x5xf32>) outs(%e2 : tensor<2x3x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.cmpf ugt, %in, %f0 : f32
    %1 = arith.select %0, %in, %f0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x3x5xf32>
  %e3 = tensor.empty() : tensor<2x3x5xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r : tensor<2x3x5xf32>) outs(%e3 : tensor<2x3x5xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %so : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %f0 : f32
    %3 = arith.maximumf %2, %f0 : f32
    %4 = arith.minimumf %3, %f255 : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<2x3x5xi8>
  return %q : tensor<2x3x5xi8>
}

// -----

// Zero points of 0 on the s8 side and 128 on the u8 side (0 after the
// shift): no row or column sums, and a float result.
// CHECK-LABEL: func.func @no_sums_for_zero_zero_points(
// CHECK:         %[[ACC:.+]] = linalg.batch_matmul
// CHECK-NOT:     "reduction"
// CHECK:         %[[Y:.+]] = linalg.generic {{.*}} ins(%[[ACC]] : tensor<1x2x2xi32>)
// CHECK:           arith.sitofp
// CHECK:           %[[REAL:.+]] = arith.mulf
// CHECK-NEXT:      linalg.yield %[[REAL]] : f32
// CHECK:         return %[[Y]] : tensor<1x2x2xf32>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @no_sums_for_zero_zero_points(%xq: tensor<1x2x3xi8>, %yq: tensor<1x3x2xi8>) -> tensor<1x2x2xf32> {
  %zx = arith.constant 128 : i64
  %f0 = arith.constant 0.000000e+00 : f32
  %s = arith.constant 0.5 : f32
  %e0 = tensor.empty() : tensor<1x2x3xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xq : tensor<1x2x3xi8>) outs(%e0 : tensor<1x2x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extui %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %s : f32
    linalg.yield %3 : f32
  } -> tensor<1x2x3xf32>
  %e1 = tensor.empty() : tensor<1x3x2xf32>
  %yd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%yq : tensor<1x3x2xi8>) outs(%e1 : tensor<1x3x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x3x2xf32>
  %e2 = tensor.empty() : tensor<1x2x2xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %bm = linalg.batch_matmul ins(%xd, %yd : tensor<1x2x3xf32>, tensor<1x3x2xf32>) outs(%fill : tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  return %bm : tensor<1x2x2xf32>
}

// -----

// Not folded: one operand is float (not dequantized), and one is
// dequantized per channel (its scales along the batch).
// CHECK-LABEL: func.func @float_or_per_channel_operands_are_not_folded(
// CHECK:         linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<2x2x2xf32>, tensor<2x2x2xf32>)
// CHECK:         linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<2x2x2xf32>, tensor<2x2x2xf32>)
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#b = affine_map<(d0, d1, d2) -> (d0)>
func.func @float_or_per_channel_operands_are_not_folded(%xq: tensor<2x2x2xi8>, %y: tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x2xf32>) {
  %f0 = arith.constant 0.000000e+00 : f32
  %s = arith.constant 0.5 : f32
  %sb = arith.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %e0 = tensor.empty() : tensor<2x2x2xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xq : tensor<2x2x2xi8>) outs(%e0 : tensor<2x2x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x2xf32>
  %xc = linalg.generic {indexing_maps = [#id, #b, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xq, %sb : tensor<2x2x2xi8>, tensor<2xf32>) outs(%e0 : tensor<2x2x2xf32>) {
  ^bb0(%in: i8, %sc: f32, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %sc : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x2xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e0 : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %a = linalg.batch_matmul ins(%xd, %y : tensor<2x2x2xf32>, tensor<2x2x2xf32>) outs(%fill : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %c = linalg.batch_matmul ins(%xc, %xd : tensor<2x2x2xf32>, tensor<2x2x2xf32>) outs(%fill : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  return %a, %c : tensor<2x2x2xf32>, tensor<2x2x2xf32>
}

// -----

// The same layer with clamp(max=3) (torch-mlir's four generics) instead of
// the ReLU: the quantize's range becomes [0, roundeven(3 / 0.125)] = [0, 24].
// CHECK-LABEL: func.func @folds_clamp_max_into_requantize(
// CHECK:         %[[ACC:.+]] = linalg.batch_matmul
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %{{.+}}, %{{.+}} : tensor<2x3x5xi32>, tensor<2x3xi32>, tensor<2x5xi32>)
// CHECK:           math.roundeven
// CHECK:           arith.addf
// CHECK-NEXT:      %[[LOW:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      arith.maximumf %{{.+}}, %[[LOW]] : f32
// CHECK-NEXT:      %[[HIGH:.+]] = arith.constant 2.400000e+01 : f32
// CHECK-NEXT:      arith.minimumf %{{.+}}, %[[HIGH]] : f32
// CHECK-NEXT:      arith.fptoui
// CHECK-NOT:     arith.select
// CHECK:         return %[[Q]] : tensor<2x3x5xi8>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#scalar = affine_map<(d0, d1, d2) -> ()>
func.func @folds_clamp_max_into_requantize(%xq: tensor<2x3x4xi8>, %yq: tensor<2x4x5xi8>) -> tensor<2x3x5xi8> {
  %zx = arith.constant 130 : i64
  %zy = arith.constant -3 : i64
  %f0 = arith.constant 0.000000e+00 : f32
  %f255 = arith.constant 2.550000e+02 : f32
  %sx = arith.constant 0.5 : f32
  %sy = arith.constant 0.25 : f32
  %so = arith.constant 0.125 : f32
  %e0 = tensor.empty() : tensor<2x3x4xf32>
  %xd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xq : tensor<2x3x4xi8>) outs(%e0 : tensor<2x3x4xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extui %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<2x3x4xf32>
  %e1 = tensor.empty() : tensor<2x4x5xf32>
  %yd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%yq : tensor<2x4x5xi8>) outs(%e1 : tensor<2x4x5xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zy : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sy : f32
    linalg.yield %3 : f32
  } -> tensor<2x4x5xf32>
  %e2 = tensor.empty() : tensor<2x3x5xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %bm = linalg.batch_matmul ins(%xd, %yd : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%fill : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %b = tensor.empty() : tensor<2x3x5xi1>
  %hi64 = arith.constant 3.000000e+00 : f64
  %hi = arith.constant dense<3.000000e+00> : tensor<f32>
  %le = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%bm : tensor<2x3x5xf32>) outs(%b : tensor<2x3x5xi1>) {
  ^bb0(%in: f32, %out: i1):
    %0 = arith.extf %in : f32 to f64
    %1 = arith.cmpf ole, %0, %hi64 : f64
    linalg.yield %1 : i1
  } -> tensor<2x3x5xi1>
  %nan = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%bm, %bm : tensor<2x3x5xf32>, tensor<2x3x5xf32>) outs(%b : tensor<2x3x5xi1>) {
  ^bb0(%in: f32, %in1: f32, %out: i1):
    %0 = arith.cmpf une, %in, %in1 : f32
    linalg.yield %0 : i1
  } -> tensor<2x3x5xi1>
  %keep = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%le, %nan : tensor<2x3x5xi1>, tensor<2x3x5xi1>) outs(%b : tensor<2x3x5xi1>) {
  ^bb0(%in: i1, %in1: i1, %out: i1):
    %0 = arith.ori %in, %in1 : i1
    linalg.yield %0 : i1
  } -> tensor<2x3x5xi1>
  %r = linalg.generic {indexing_maps = [#id, #id, #scalar, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%keep, %bm, %hi : tensor<2x3x5xi1>, tensor<2x3x5xf32>, tensor<f32>) outs(%e2 : tensor<2x3x5xf32>) {
  ^bb0(%in: i1, %in1: f32, %in2: f32, %out: f32):
    %0 = arith.select %in, %in1, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<2x3x5xf32>
  %e3 = tensor.empty() : tensor<2x3x5xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r : tensor<2x3x5xf32>) outs(%e3 : tensor<2x3x5xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %so : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %f0 : f32
    %3 = arith.maximumf %2, %f0 : f32
    %4 = arith.minimumf %3, %f255 : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<2x3x5xi8>
  return %q : tensor<2x3x5xi8>
}
