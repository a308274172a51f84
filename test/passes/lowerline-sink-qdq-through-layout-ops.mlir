// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-sink-qdq-through-layout-ops))" \
// RUN:   --split-input-file | FileCheck %s

// X86InductorQuantizer's conv -> ReLU -> max pooling -> quantize: the
// quantize (u8, scale 0.5) moves above the pooling, which runs on the
// integers flipped to s8 (xori, signed max) from a fill of quantize(-inf)
// = 0, i.e. -128 flipped, and flips back.
// CHECK-LABEL: func.func @hoists_quantize_above_max_pooling(
// CHECK-SAME:      %[[Y:.+]]: tensor<1x2x4x4xf32>
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<1x2x4x4xf32>) outs(%{{.+}} : tensor<1x2x4x4xi8>)
// CHECK:           arith.divf
// CHECK:           math.roundeven
// CHECK:           arith.fptoui
// CHECK:         %[[S:.+]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<1x2x4x4xi8>)
// CHECK:           arith.xori
// CHECK:         %[[LOW:.+]] = arith.constant -128 : i8
// CHECK:         %[[FILL:.+]] = linalg.fill ins(%[[LOW]] : i8)
// CHECK:         %[[P:.+]] = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%[[S]], %{{.+}} : tensor<1x2x4x4xi8>, tensor<2x2xi8>) outs(%[[FILL]] : tensor<1x2x2x2xi8>)
// CHECK:         %[[U:.+]] = linalg.generic {{.*}} ins(%[[P]] : tensor<1x2x2x2xi8>)
// CHECK:           arith.xori
// CHECK-NOT:     linalg.pooling_nchw_max
// CHECK:         return %[[U]] : tensor<1x2x2x2xi8>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @hoists_quantize_above_max_pooling(%y: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xi8> {
  %f0 = arith.constant 0.000000e+00 : f32
  %f255 = arith.constant 2.550000e+02 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = arith.constant 0.5 : f32
  %e0 = tensor.empty() : tensor<1x2x2x2xf32>
  %fill = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %p = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%y, %win : tensor<1x2x4x4xf32>, tensor<2x2xf32>) outs(%fill : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %e1 = tensor.empty() : tensor<1x2x2x2xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p : tensor<1x2x2x2xf32>) outs(%e1 : tensor<1x2x2x2xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %f0 : f32
    %3 = arith.maximumf %2, %f0 : f32
    %4 = arith.minimumf %3, %f255 : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<1x2x2x2xi8>
  return %q : tensor<1x2x2x2xi8>
}

// -----

// A convolution's input: dequantize (u8, zero point 7) then a 0.0 pad. The
// pad moves onto the integers with the zero point as its value and the
// dequantize follows it.
// CHECK-LABEL: func.func @sinks_dequantize_below_pad(
// CHECK-SAME:      %[[X:.+]]: tensor<1x1x2x2xi8>
// CHECK:         %[[PAD:.+]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK:           %[[ZP:.+]] = arith.constant 7 : i8
// CHECK:           tensor.yield %[[ZP]] : i8
// CHECK:         } : tensor<1x1x2x2xi8> to tensor<1x1x4x4xi8>
// CHECK:         %[[D:.+]] = linalg.generic {{.*}} ins(%[[PAD]] : tensor<1x1x4x4xi8>) outs(%{{.+}} : tensor<1x1x4x4xf32>)
// CHECK:           arith.extui
// CHECK:           arith.subi
// CHECK:           arith.mulf
// CHECK:         return %[[D]] : tensor<1x1x4x4xf32>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @sinks_dequantize_below_pad(%x: tensor<1x1x2x2xi8>) -> tensor<1x1x4x4xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %z = arith.constant 7 : i64
  %s = arith.constant 0.25 : f32
  %e0 = tensor.empty() : tensor<1x1x2x2xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x1x2x2xi8>) outs(%e0 : tensor<1x1x2x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extui %in : i8 to i64
    %1 = arith.subi %0, %z : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %s : f32
    linalg.yield %3 : f32
  } -> tensor<1x1x2x2xf32>
  %padded = tensor.pad %d low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %e: index):
    tensor.yield %f0 : f32
  } : tensor<1x1x2x2xf32> to tensor<1x1x4x4xf32>
  return %padded : tensor<1x1x4x4xf32>
}

// -----

// XNNPACKQuantizer's shared parameters around layout ops: s8 dequantize ->
// transpose -> collapse -> quantize with the same scale and zero point. The
// quantize/dequantize pair goes away and both layout ops run on the integers.
// CHECK-LABEL: func.func @removes_pair_around_transpose_and_reshape(
// CHECK-SAME:      %[[X:.+]]: tensor<2x3xi8>
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[X]] : tensor<2x3xi8>) outs(%{{.+}} : tensor<3x2xi8>) permutation = [1, 0]
// CHECK:         %[[C:.+]] = tensor.collapse_shape %[[T]] {{.+}} : tensor<3x2xi8> into tensor<6xi8>
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[C]] : tensor<6xi8>
#id = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
func.func @removes_pair_around_transpose_and_reshape(%x: tensor<2x3xi8>) -> tensor<6xi8> {
  %z = arith.constant -3 : i64
  %zf = arith.constant -3.000000e+00 : f32
  %lo = arith.constant -1.280000e+02 : f32
  %hi = arith.constant 1.270000e+02 : f32
  %s = arith.constant 0.1 : f32
  %e0 = tensor.empty() : tensor<2x3xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xi8>) outs(%e0 : tensor<2x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extsi %in : i8 to i64
    %1 = arith.subi %0, %z : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.mulf %2, %s : f32
    linalg.yield %3 : f32
  } -> tensor<2x3xf32>
  %e1 = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%d : tensor<2x3xf32>) outs(%e1 : tensor<3x2xf32>) permutation = [1, 0]
  %c = tensor.collapse_shape %t [[0, 1]] : tensor<3x2xf32> into tensor<6xf32>
  %e2 = tensor.empty() : tensor<6xi8>
  %q = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%c : tensor<6xf32>) outs(%e2 : tensor<6xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zf : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptosi %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<6xi8>
  return %q : tensor<6xi8>
}

// -----

// A concat of two inputs dequantized with the same parameters becomes a
// concat of the integers, dequantized once.
// CHECK-LABEL: func.func @sinks_dequantize_below_concat(
// CHECK-SAME:      %[[A:.+]]: tensor<1x2xi8>, %[[B:.+]]: tensor<1x3xi8>
// CHECK:         %[[C:.+]] = tensor.concat dim(1) %[[A]], %[[B]] : (tensor<1x2xi8>, tensor<1x3xi8>) -> tensor<1x5xi8>
// CHECK:         %[[D:.+]] = linalg.generic {{.*}} ins(%[[C]] : tensor<1x5xi8>) outs(%{{.+}} : tensor<1x5xf32>)
// CHECK:         return %[[D]] : tensor<1x5xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @sinks_dequantize_below_concat(%a: tensor<1x2xi8>, %b: tensor<1x3xi8>) -> tensor<1x5xf32> {
  %s = arith.constant 0.5 : f32
  %ea = tensor.empty() : tensor<1x2xf32>
  %da = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<1x2xi8>) outs(%ea : tensor<1x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.uitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x2xf32>
  %eb = tensor.empty() : tensor<1x3xf32>
  %db = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<1x3xi8>) outs(%eb : tensor<1x3xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.uitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x3xf32>
  %c = tensor.concat dim(1) %da, %db : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
  return %c : tensor<1x5xf32>
}

// -----

// Not moved: a concat of inputs with different scales, a pad value (0.3)
// no stored integer gives, a dequantized constant (a weight, read by the
// folds where it is).
// CHECK-LABEL: func.func @mismatched_scales_odd_pad_and_weights_stay(
// CHECK:         tensor.concat dim(1) %{{.+}}, %{{.+}} : (tensor<1x2xf32>, tensor<1x2xf32>)
// CHECK:         tensor.pad %{{.+}} low[1, 1] high[0, 0]
// CHECK:           tensor.yield %{{.+}} : f32
// CHECK:         linalg.transpose ins(%{{.+}} : tensor<1x2xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @mismatched_scales_odd_pad_and_weights_stay(%a: tensor<1x2xi8>) -> (tensor<1x4xf32>, tensor<2x3xf32>, tensor<2x1xf32>) {
  %s = arith.constant 0.5 : f32
  %t = arith.constant 0.25 : f32
  %odd = arith.constant 0.3 : f32
  %w = arith.constant dense<[[1, 2]]> : tensor<1x2xi8>
  %ea = tensor.empty() : tensor<1x2xf32>
  %da = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<1x2xi8>) outs(%ea : tensor<1x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.uitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x2xf32>
  %db = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<1x2xi8>) outs(%ea : tensor<1x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.uitofp %in : i8 to f32
    %1 = arith.mulf %0, %t : f32
    linalg.yield %1 : f32
  } -> tensor<1x2xf32>
  %c = tensor.concat dim(1) %da, %db : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x4xf32>
  %p = tensor.pad %da low[1, 1] high[0, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %odd : f32
  } : tensor<1x2xf32> to tensor<2x3xf32>
  %dw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<1x2xi8>) outs(%ea : tensor<1x2xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.sitofp %in : i8 to f32
    %1 = arith.mulf %0, %s : f32
    linalg.yield %1 : f32
  } -> tensor<1x2xf32>
  %et = tensor.empty() : tensor<2x1xf32>
  %wt = linalg.transpose ins(%dw : tensor<1x2xf32>) outs(%et : tensor<2x1xf32>) permutation = [1, 0]
  return %c, %p, %wt : tensor<1x4xf32>, tensor<2x3xf32>, tensor<2x1xf32>
}

// -----

// lowerline's Int8 attention: q, k and v are sliced out of the dequantized
// in-projection (u8, zero point 126) and quantized again with the same
// parameters. Each slice moves onto the integers and the pair around it
// goes away: no float tensor is left.
// CHECK-LABEL: func.func @removes_pair_around_extract_slice(
// CHECK-SAME:      %[[X:.+]]: tensor<3x4x8xi8>
// CHECK-DAG:     %[[Q:.+]] = tensor.extract_slice %[[X]][0, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xi8> to tensor<4x8xi8>
// CHECK-DAG:     %[[V:.+]] = tensor.extract_slice %[[X]][2, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xi8> to tensor<4x8xi8>
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[Q]], %[[V]] : tensor<4x8xi8>, tensor<4x8xi8>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @removes_pair_around_extract_slice(%x: tensor<3x4x8xi8>) -> (tensor<4x8xi8>, tensor<4x8xi8>) {
  %z = arith.constant 126 : i32
  %zf = arith.constant 1.260000e+02 : f32
  %lo = arith.constant 0.000000e+00 : f32
  %hi = arith.constant 2.550000e+02 : f32
  %s = arith.constant 0.125 : f32
  %e0 = tensor.empty() : tensor<3x4x8xf32>
  %d = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<3x4x8xi8>) outs(%e0 : tensor<3x4x8xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extui %in : i8 to i32
    %1 = arith.subi %0, %z : i32
    %2 = arith.sitofp %1 : i32 to f32
    %3 = arith.mulf %2, %s : f32
    linalg.yield %3 : f32
  } -> tensor<3x4x8xf32>
  %sq = tensor.extract_slice %d[0, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xf32> to tensor<4x8xf32>
  %sv = tensor.extract_slice %d[2, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xf32> to tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xi8>
  %q = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%sq : tensor<4x8xf32>) outs(%e1 : tensor<4x8xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zf : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<4x8xi8>
  %v = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%sv : tensor<4x8xf32>) outs(%e1 : tensor<4x8xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zf : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<4x8xi8>
  return %q, %v : tensor<4x8xi8>, tensor<4x8xi8>
}

// -----

// A slice quantized with another scale (0.25, not 0.125) is a requantize:
// the slice still moves onto the integers (sinking is exact), but its
// dequantize and the quantize both stay. A quantize after a slice of a
// float tensor is not hoisted above it (it would quantize all of %y).
// CHECK-LABEL: func.func @different_scale_keeps_requantize_after_slice(
// CHECK-SAME:      %[[X:.+]]: tensor<3x4x8xi8>, %[[Y:.+]]: tensor<3x4x8xf32>
// CHECK:         %[[S:.+]] = tensor.extract_slice %[[X]][1, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xi8> to tensor<4x8xi8>
// CHECK:         %[[D:.+]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4x8xi8>) outs(%{{.+}} : tensor<4x8xf32>)
// CHECK:           arith.mulf
// CHECK:         %[[R:.+]] = linalg.generic {{.*}} ins(%[[D]] : tensor<4x8xf32>) outs(%{{.+}} : tensor<4x8xi8>)
// CHECK:           arith.divf
// CHECK:         %[[FS:.+]] = tensor.extract_slice %[[Y]][1, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xf32> to tensor<4x8xf32>
// CHECK:         %[[FQ:.+]] = linalg.generic {{.*}} ins(%[[FS]] : tensor<4x8xf32>) outs(%{{.+}} : tensor<4x8xi8>)
// CHECK:         return %[[R]], %[[FQ]] : tensor<4x8xi8>, tensor<4x8xi8>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @different_scale_keeps_requantize_after_slice(%x: tensor<3x4x8xi8>, %y: tensor<3x4x8xf32>) -> (tensor<4x8xi8>, tensor<4x8xi8>) {
  %z = arith.constant 126 : i32
  %zf = arith.constant 1.260000e+02 : f32
  %lo = arith.constant 0.000000e+00 : f32
  %hi = arith.constant 2.550000e+02 : f32
  %s = arith.constant 0.125 : f32
  %t = arith.constant 0.25 : f32
  %e0 = tensor.empty() : tensor<3x4x8xf32>
  %d = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<3x4x8xi8>) outs(%e0 : tensor<3x4x8xf32>) {
  ^bb0(%in: i8, %out: f32):
    %0 = arith.extui %in : i8 to i32
    %1 = arith.subi %0, %z : i32
    %2 = arith.sitofp %1 : i32 to f32
    %3 = arith.mulf %2, %s : f32
    linalg.yield %3 : f32
  } -> tensor<3x4x8xf32>
  %sk = tensor.extract_slice %d[1, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xf32> to tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xi8>
  %k = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%sk : tensor<4x8xf32>) outs(%e1 : tensor<4x8xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %t : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zf : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<4x8xi8>
  %fs = tensor.extract_slice %y[1, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xf32> to tensor<4x8xf32>
  %fq = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%fs : tensor<4x8xf32>) outs(%e1 : tensor<4x8xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.divf %in, %s : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %zf : f32
    %3 = arith.maximumf %2, %lo : f32
    %4 = arith.minimumf %3, %hi : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<4x8xi8>
  return %k, %fq : tensor<4x8xi8>, tensor<4x8xi8>
}

// -----

// The frontend's quantize (x * f32(1 / 0.3), marked with its scale) moves
// above a transpose as torch-mlir's division does, rebuilt in the same form:
// the multiply and the mark stay, so the folds take it again.
// CHECK-LABEL: func.func @hoists_marked_quantize_above_transpose(
// CHECK-SAME:      %[[Y:.+]]: tensor<2x3xf32>
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<2x3xf32>) outs(%{{.+}} : tensor<2x3xi8>) attrs = {lowerline.quantize = 0.30000001192092896 : f64}
// CHECK:           arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT:      math.roundeven
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[Q]] : tensor<2x3xi8>)
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[T]] : tensor<3x2xi8>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @hoists_marked_quantize_above_transpose(%y: tensor<2x3xf32>) -> tensor<3x2xi8> {
  %f0 = arith.constant 0.000000e+00 : f32
  %f255 = arith.constant 2.550000e+02 : f32
  %inv = arith.constant 3.33333325 : f32
  %e0 = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%y : tensor<2x3xf32>) outs(%e0 : tensor<3x2xf32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<3x2xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<3x2xf32>) outs(%e1 : tensor<3x2xi8>) attrs = {lowerline.quantize = 0.30000001192092896 : f64} {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.mulf %in, %inv : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %f0 : f32
    %3 = arith.maximumf %2, %f0 : f32
    %4 = arith.minimumf %3, %f255 : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<3x2xi8>
  return %q : tensor<3x2xi8>
}

// -----

// Without the mark the same generic is a user's round(x * 3.33333325): no
// quantize to move, the transpose stays on the floats.
// CHECK-LABEL: func.func @keeps_unmarked_multiply_after_transpose(
// CHECK:         %[[T:.+]] = linalg.transpose ins(%{{.+}} : tensor<2x3xf32>)
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} ins(%[[T]] : tensor<3x2xf32>)
// CHECK:         return %[[Q]] : tensor<3x2xi8>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @keeps_unmarked_multiply_after_transpose(%y: tensor<2x3xf32>) -> tensor<3x2xi8> {
  %f0 = arith.constant 0.000000e+00 : f32
  %f255 = arith.constant 2.550000e+02 : f32
  %inv = arith.constant 3.33333325 : f32
  %e0 = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%y : tensor<2x3xf32>) outs(%e0 : tensor<3x2xf32>) permutation = [1, 0]
  %e1 = tensor.empty() : tensor<3x2xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<3x2xf32>) outs(%e1 : tensor<3x2xi8>) {
  ^bb0(%in: f32, %out: i8):
    %0 = arith.mulf %in, %inv : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.addf %1, %f0 : f32
    %3 = arith.maximumf %2, %f0 : f32
    %4 = arith.minimumf %3, %f255 : f32
    %5 = arith.fptoui %4 : f32 to i8
    linalg.yield %5 : i8
  } -> tensor<3x2xi8>
  return %q : tensor<3x2xi8>
}
