// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fold-qdq-matmul))" \
// RUN:   --split-input-file | FileCheck %s

// ReLU6 and clamps between the matmul and the quantize, as torch-mlir lowers
// hardtanh/relu6/clamp: per bound, four generics (x >= low, or <= high, in
// f64 where the bound is a Python float; x != x; or; select(keep, x, bound)).
// The s8 activation has zero point -3 and scale 0.5, the weight scale 0.25,
// so c[n] = 3 * sum_k w[k, n] = [12, 18, 3].

// ReLU6 then a u8 quantize (scale 1/4, zero point 3): the clamp becomes the
// quantize's range, [roundeven(0 / 0.25) + 3, roundeven(6 / 0.25) + 3] = [3, 27].
// CHECK-LABEL: func.func @folds_relu6_into_requantize(
// CHECK:         %[[ACC:.+]] = linalg.matmul
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %{{.+}}, %{{.+}} : tensor<2x3xi32>, tensor<3xi32>, tensor<3xf32>)
// CHECK:           arith.mulf
// CHECK-NEXT:      math.roundeven
// CHECK:           arith.addf
// CHECK-NEXT:       %[[LOW:.+]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      arith.maximumf %{{.+}}, %[[LOW]] : f32
// CHECK-NEXT:      %[[HIGH:.+]] = arith.constant 2.700000e+01 : f32
// CHECK-NEXT:      arith.minimumf %{{.+}}, %[[HIGH]] : f32
// CHECK-NEXT:      arith.fptoui
// CHECK-NOT:     arith.cmpf
// CHECK-NOT:     arith.select
// CHECK:         return %[[Q]] : tensor<2x3xi8>
#id = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>
func.func @folds_relu6_into_requantize(%xq: tensor<2x2xi8>) -> tensor<2x3xi8> {
  %zx = arith.constant -3 : i64
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
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%xd, %wd : tensor<2x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = tensor.empty() : tensor<2x3xi1>
  %cmp0 = arith.constant 0.000000e+00 : f32
  %sel0 = arith.constant dense<0.000000e+00> : tensor<f32>
  %t0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf oge, %in, %cmp0 : f32
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %n0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %mm : tensor<2x3xf32>, tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %in1: f32, %out: i1):
    %c = arith.cmpf une, %in, %in1 : f32
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %o0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %n0 : tensor<2x3xi1>, tensor<2x3xi1>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: i1, %in1: i1, %out: i1):
    %c = arith.ori %in, %in1 : i1
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %lowc = linalg.generic {indexing_maps = [#id, #id, #s, #id], iterator_types = ["parallel", "parallel"]} ins(%o0, %mm, %sel0 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%in: i1, %in1: f32, %in2: f32, %out: f32):
    %c = arith.select %in, %in1, %in2 : f32
    linalg.yield %c : f32
  } -> tensor<2x3xf32>
  %cmp1 = arith.constant 6.000000e+00 : f32
  %sel1 = arith.constant dense<6.000000e+00> : tensor<f32>
  %t1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%lowc : tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf ole, %in, %cmp1 : f32
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %n1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%lowc, %lowc : tensor<2x3xf32>, tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %in1: f32, %out: i1):
    %c = arith.cmpf une, %in, %in1 : f32
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %o1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t1, %n1 : tensor<2x3xi1>, tensor<2x3xi1>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: i1, %in1: i1, %out: i1):
    %c = arith.ori %in, %in1 : i1
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %highc = linalg.generic {indexing_maps = [#id, #id, #s, #id], iterator_types = ["parallel", "parallel"]} ins(%o1, %lowc, %sel1 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%in: i1, %in1: f32, %in2: f32, %out: f32):
    %c = arith.select %in, %in1, %in2 : f32
    linalg.yield %c : f32
  } -> tensor<2x3xf32>
  %sy = arith.constant 0.25 : f32
  %zy = arith.constant 3.0 : f32
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 255.0 : f32
  %e5 = tensor.empty() : tensor<2x3xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%highc : tensor<2x3xf32>) outs(%e5 : tensor<2x3xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %sy : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zy : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<2x3xi8>
  return %q : tensor<2x3xi8>
}

// -----

// clamp(-0.5, 1.5) and a float result: min and max on the real value.
// CHECK-LABEL: func.func @folds_clamp_into_float_result(
// CHECK:         %[[Y:.+]] = linalg.generic
// CHECK:           %[[REAL:.+]] = arith.mulf
// CHECK-NEXT:      %[[LOW:.+]] = arith.constant -5.000000e-01 : f32
// CHECK-NEXT:      %[[MAX:.+]] = arith.maximumf %[[REAL]], %[[LOW]] : f32
// CHECK-NEXT:      %[[HIGH:.+]] = arith.constant 1.500000e+00 : f32
// CHECK-NEXT:      %[[MIN:.+]] = arith.minimumf %[[MAX]], %[[HIGH]] : f32
// CHECK-NEXT:      linalg.yield %[[MIN]] : f32
// CHECK-NOT:     arith.select
// CHECK:         return %[[Y]] : tensor<2x3xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>
func.func @folds_clamp_into_float_result(%xq: tensor<2x2xi8>) -> tensor<2x3xf32> {
  %zx = arith.constant -3 : i64
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
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%xd, %wd : tensor<2x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = tensor.empty() : tensor<2x3xi1>
  %cmp0 = arith.constant -5.000000e-01 : f64
  %sel0 = arith.constant dense<-5.000000e-01> : tensor<f32>
  %t0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %out: i1):
    %e = arith.extf %in : f32 to f64
    %c = arith.cmpf oge, %e, %cmp0 : f64
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %n0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %mm : tensor<2x3xf32>, tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %in1: f32, %out: i1):
    %c = arith.cmpf une, %in, %in1 : f32
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %o0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %n0 : tensor<2x3xi1>, tensor<2x3xi1>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: i1, %in1: i1, %out: i1):
    %c = arith.ori %in, %in1 : i1
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %lowc = linalg.generic {indexing_maps = [#id, #id, #s, #id], iterator_types = ["parallel", "parallel"]} ins(%o0, %mm, %sel0 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%in: i1, %in1: f32, %in2: f32, %out: f32):
    %c = arith.select %in, %in1, %in2 : f32
    linalg.yield %c : f32
  } -> tensor<2x3xf32>
  %cmp1 = arith.constant 1.500000e+00 : f64
  %sel1 = arith.constant dense<1.500000e+00> : tensor<f32>
  %t1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%lowc : tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %out: i1):
    %e = arith.extf %in : f32 to f64
    %c = arith.cmpf ole, %e, %cmp1 : f64
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %n1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%lowc, %lowc : tensor<2x3xf32>, tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %in1: f32, %out: i1):
    %c = arith.cmpf une, %in, %in1 : f32
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %o1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t1, %n1 : tensor<2x3xi1>, tensor<2x3xi1>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: i1, %in1: i1, %out: i1):
    %c = arith.ori %in, %in1 : i1
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %highc = linalg.generic {indexing_maps = [#id, #id, #s, #id], iterator_types = ["parallel", "parallel"]} ins(%o1, %lowc, %sel1 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%in: i1, %in1: f32, %in2: f32, %out: f32):
    %c = arith.select %in, %in1, %in2 : f32
    linalg.yield %c : f32
  } -> tensor<2x3xf32>
  return %highc : tensor<2x3xf32>
}

// -----

// A lower bound only (clamp_min 0.25), s8 quantize (scale 0.5, zero point
// -1): the range becomes [roundeven(0.25 / 0.5) - 1, 127] = [-1, 127].
// CHECK-LABEL: func.func @folds_clamp_min_into_s8_requantize(
// CHECK:         linalg.generic
// CHECK:           math.roundeven
// CHECK:           arith.addf
// CHECK-NEXT:       %[[LOW:.+]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT:      arith.maximumf %{{.+}}, %[[LOW]] : f32
// CHECK-NEXT:      %[[HIGH:.+]] = arith.constant 1.270000e+02 : f32
// CHECK-NEXT:      arith.minimumf %{{.+}}, %[[HIGH]] : f32
// CHECK-NEXT:      arith.fptosi
// CHECK-NOT:     arith.select
#id = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>
func.func @folds_clamp_min_into_s8_requantize(%xq: tensor<2x2xi8>) -> tensor<2x3xi8> {
  %zx = arith.constant -3 : i64
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
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%xd, %wd : tensor<2x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = tensor.empty() : tensor<2x3xi1>
  %cmp0 = arith.constant 2.500000e-01 : f64
  %sel0 = arith.constant dense<2.500000e-01> : tensor<f32>
  %t0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %out: i1):
    %e = arith.extf %in : f32 to f64
    %c = arith.cmpf oge, %e, %cmp0 : f64
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %n0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %mm : tensor<2x3xf32>, tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %in1: f32, %out: i1):
    %c = arith.cmpf une, %in, %in1 : f32
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %o0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %n0 : tensor<2x3xi1>, tensor<2x3xi1>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: i1, %in1: i1, %out: i1):
    %c = arith.ori %in, %in1 : i1
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %lowc = linalg.generic {indexing_maps = [#id, #id, #s, #id], iterator_types = ["parallel", "parallel"]} ins(%o0, %mm, %sel0 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%in: i1, %in1: f32, %in2: f32, %out: f32):
    %c = arith.select %in, %in1, %in2 : f32
    linalg.yield %c : f32
  } -> tensor<2x3xf32>
  %sy = arith.constant 0.5 : f32
  %zy = arith.constant -1.0 : f32
  %lo = arith.constant -128.0 : f32
  %hi = arith.constant 127.0 : f32
  %e5 = tensor.empty() : tensor<2x3xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%lowc : tensor<2x3xf32>) outs(%e5 : tensor<2x3xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %sy : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zy : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<2x3xi8>
  return %q : tensor<2x3xi8>
}

// -----

// Not a clamp: x >= 1 keeps x, else 0 (the compared bound is not the
// selected one). The matmul folds with a float result; the threshold and the
// quantize stay as they were.
// CHECK-LABEL: func.func @keeps_threshold_that_is_not_a_clamp(
// CHECK:         %[[Y:.+]] = linalg.generic
// CHECK:           %[[REAL:.+]] = arith.mulf
// CHECK-NEXT:      linalg.yield %[[REAL]] : f32
// CHECK:         arith.cmpf oge
// CHECK:         arith.cmpf une
// CHECK:         arith.ori
// CHECK:         arith.select
// CHECK:         arith.divf
// CHECK:         math.roundeven
#id = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>
func.func @keeps_threshold_that_is_not_a_clamp(%xq: tensor<2x2xi8>) -> tensor<2x3xi8> {
  %zx = arith.constant -3 : i64
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
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %zx : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %sx : f32
    linalg.yield %3 : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %fill = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%xd, %wd : tensor<2x2xf32>, tensor<2x3xf32>) outs(%fill : tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = tensor.empty() : tensor<2x3xi1>
  %cmp0 = arith.constant 1.000000e+00 : f32
  %sel0 = arith.constant dense<0.000000e+00> : tensor<f32>
  %t0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf oge, %in, %cmp0 : f32
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %n0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %mm : tensor<2x3xf32>, tensor<2x3xf32>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: f32, %in1: f32, %out: i1):
    %c = arith.cmpf une, %in, %in1 : f32
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %o0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%t0, %n0 : tensor<2x3xi1>, tensor<2x3xi1>) outs(%b : tensor<2x3xi1>) {
  ^bb0(%in: i1, %in1: i1, %out: i1):
    %c = arith.ori %in, %in1 : i1
    linalg.yield %c : i1
  } -> tensor<2x3xi1>
  %lowc = linalg.generic {indexing_maps = [#id, #id, #s, #id], iterator_types = ["parallel", "parallel"]} ins(%o0, %mm, %sel0 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) outs(%e2 : tensor<2x3xf32>) {
  ^bb0(%in: i1, %in1: f32, %in2: f32, %out: f32):
    %c = arith.select %in, %in1, %in2 : f32
    linalg.yield %c : f32
  } -> tensor<2x3xf32>
  %sy = arith.constant 0.25 : f32
  %zy = arith.constant 3.0 : f32
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 255.0 : f32
  %e5 = tensor.empty() : tensor<2x3xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%lowc : tensor<2x3xf32>) outs(%e5 : tensor<2x3xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %sy : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zy : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<2x3xi8>
  return %q : tensor<2x3xi8>
}
