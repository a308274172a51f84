// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-int8-conv-matmul{target=sapphirerapids explain=1}))" \
// RUN:   --split-input-file 2>%t.explain | FileCheck %s
// RUN: FileCheck %s --check-prefix=EXPLAIN < %t.explain
// Without an int8 dot product (haswell: no VNNI) nothing is rewritten.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-int8-conv-matmul{target=haswell}))" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PORTABLE
// The whole tiled stage: the taps' generic is vectorized along the channels.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-int8-conv-matmul{target=sapphirerapids},lowerline-decompose-pad),lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize{target=sapphirerapids},canonicalize)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=TILED

// A 2x2 stride-2 depthwise convolution over 3 channels of a 6 x 7 input
// padded with the zero point 5 (rows 1 + 1, columns 0 + 2), batch 2,
// accumulators starting at 7, its requantize epilogue (a per-channel
// multiplier): channels-last, one strided slice of the padded input per tap,
// per tap a 3-vector of i32 weights (w[c, kh, kw]), the epilogue fused into
// the taps' generic, the result transposed back to NCHW.
// EXPLAIN: lowerline-int8-conv-matmul-depthwise.mlir:[[@LINE+38]]:8: remark: linalg.depthwise_conv_2d_nchw_chw: rewritten as a channels-last generic over its 4 taps, 1 of 1 elementwise ops fused into it
// CHECK-LABEL: func.func @strided_padded(
// CHECK-SAME:      %[[X:.+]]: tensor<2x3x6x7xi8>, %[[M:.+]]: tensor<3xf32>
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[X]] : tensor<2x3x6x7xi8>) outs(%{{.+}} : tensor<2x6x7x3xi8>) permutation = [0, 2, 3, 1]
// CHECK:         %[[P:.+]] = tensor.pad %[[T]] low[0, 1, 0, 0] high[0, 1, 2, 0]
// CHECK:           tensor.yield %{{.+}} : i8
// CHECK:         } : tensor<2x6x7x3xi8> to tensor<2x8x9x3xi8>
// CHECK:         %[[S0:.+]] = tensor.extract_slice %[[P]][0, 0, 0, 0] [2, 4, 4, 3] [1, 2, 2, 1]
// CHECK:         %[[S1:.+]] = tensor.extract_slice %[[P]][0, 0, 1, 0] [2, 4, 4, 3] [1, 2, 2, 1]
// CHECK:         %[[S2:.+]] = tensor.extract_slice %[[P]][0, 1, 0, 0] [2, 4, 4, 3] [1, 2, 2, 1]
// CHECK:         %[[S3:.+]] = tensor.extract_slice %[[P]][0, 1, 1, 0] [2, 4, 4, 3] [1, 2, 2, 1]
// CHECK:         %[[W0:.+]] = arith.constant dense_resource<[[B0:.+\.tap0_0]]> : tensor<3xi32>
// CHECK:         %[[G:.+]] = linalg.generic {{.+}} ins(%[[S0]], %[[S1]], %[[S2]], %[[S3]], %[[W0]], %{{.+}}, %{{.+}}, %{{.+}}, %[[M]] : {{.+}}) outs(%{{.+}} : tensor<2x4x4x3xi8>)
// CHECK:           arith.extsi
// CHECK:           arith.muli
// CHECK:           arith.addi %c7_i32
// CHECK:           math.roundeven
// CHECK:         %[[O:.+]] = linalg.transpose ins(%[[G]] : tensor<2x4x4x3xi8>) outs(%{{.+}} : tensor<2x3x4x4xi8>) permutation = [0, 3, 1, 2]
// CHECK:         return %[[O]]
// Tap (0, 0) of channels 0, 1, 2: 1, 5, -9.
// CHECK:       [[B0]]: "0x400000000100000005000000F7FFFFFF"
// PORTABLE-LABEL: func.func @strided_padded(
// PORTABLE:         linalg.depthwise_conv_2d_nchw_chw
// TILED-LABEL: func.func @strided_padded(
// TILED-NOT:     linalg.depthwise_conv_2d_nchw_chw
// TILED:         arith.muli %{{.+}}, %{{.+}} : vector<{{.*}}xi32>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @strided_padded(%x: tensor<2x3x6x7xi8>, %m: tensor<3xf32>) -> tensor<2x3x4x4xi8> {
  %w = arith.constant dense<[[[1, 2], [3, 4]], [[5, 6], [7, 8]], [[-9, 10], [11, -12]]]> : tensor<3x2x2xi8>
  %z = arith.constant 5 : i8
  %c7 = arith.constant 7 : i32
  %p = tensor.pad %x low[0, 0, 1, 0] high[0, 0, 1, 2] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %z : i8
  } : tensor<2x3x6x7xi8> to tensor<2x3x8x9xi8>
  %e = tensor.empty() : tensor<2x3x4x4xi32>
  %f = linalg.fill ins(%c7 : i32) outs(%e : tensor<2x3x4x4xi32>) -> tensor<2x3x4x4xi32>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %w : tensor<2x3x8x9xi8>, tensor<3x2x2xi8>) outs(%f : tensor<2x3x4x4xi32>) -> tensor<2x3x4x4xi32>
  %e2 = tensor.empty() : tensor<2x3x4x4xi8>
  %r = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %m : tensor<2x3x4x4xi32>, tensor<3xf32>) outs(%e2 : tensor<2x3x4x4xi8>) {
  ^bb0(%a: i32, %s: f32, %o: i8):
    %0 = arith.sitofp %a : i32 to f32
    %1 = arith.mulf %0, %s : f32
    %2 = math.roundeven %1 : f32
    %3 = arith.fptosi %2 : f32 to i8
    linalg.yield %3 : i8
  } -> tensor<2x3x4x4xi8>
  return %r : tensor<2x3x4x4xi8>
}

// -----

// A MobileNet block's middle: a 1x1 convolution whose 5 x 3 plane is
// reshaped to 1 x 15 (lowerline-pointwise-conv-rows) and back, the depthwise
// 3x3 reading it, and another 1x1 convolution reading that: every value
// between them stays channels-last (through the plane reshapes and the
// transposes), no transpose but the input's and the output's.
// CHECK-LABEL: func.func @pointwise_depthwise_pointwise(
// CHECK-SAME:      %[[X:.+]]: tensor<1x4x5x3xi8>
// CHECK:         linalg.transpose ins(%[[X]] : tensor<1x4x5x3xi8>)
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<15x4xi8>, tensor<4x6xi8>)
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.generic {{.+}} outs(%{{.+}} : tensor<1x5x3x6xi8>)
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<15x6xi8>, tensor<6x2xi8>)
// CHECK:         linalg.transpose ins(%{{.+}} : tensor<1x1x15x2xi32>) outs(%{{.+}} : tensor<1x2x1x15xi32>) permutation = [0, 3, 1, 2]
func.func @pointwise_depthwise_pointwise(%x: tensor<1x4x5x3xi8>) -> tensor<1x2x1x15xi32> {
  %w1 = arith.constant dense<3> : tensor<6x4x1x1xi8>
  %wd = arith.constant dense<-2> : tensor<6x3x3xi8>
  %w2 = arith.constant dense<1> : tensor<2x6x1x1xi8>
  %z = arith.constant 0 : i8
  %c0 = arith.constant 0 : i32
  %xc = tensor.collapse_shape %x [[0], [1], [2, 3]] : tensor<1x4x5x3xi8> into tensor<1x4x15xi8>
  %xe = tensor.expand_shape %xc [[0], [1], [2, 3]] output_shape [1, 4, 1, 15] : tensor<1x4x15xi8> into tensor<1x4x1x15xi8>
  %e1 = tensor.empty() : tensor<1x6x1x15xi32>
  %f1 = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<1x6x1x15xi32>) -> tensor<1x6x1x15xi32>
  %a = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xe, %w1 : tensor<1x4x1x15xi8>, tensor<6x4x1x1xi8>) outs(%f1 : tensor<1x6x1x15xi32>) -> tensor<1x6x1x15xi32>
  %ea = tensor.empty() : tensor<1x6x1x15xi8>
  %aq = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : tensor<1x6x1x15xi32>) outs(%ea : tensor<1x6x1x15xi8>) {
  ^bb0(%in: i32, %o: i8):
    %t = arith.trunci %in : i32 to i8
    linalg.yield %t : i8
  } -> tensor<1x6x1x15xi8>
  %ac = tensor.collapse_shape %aq [[0], [1], [2, 3]] : tensor<1x6x1x15xi8> into tensor<1x6x15xi8>
  %ae = tensor.expand_shape %ac [[0], [1], [2, 3]] output_shape [1, 6, 5, 3] : tensor<1x6x15xi8> into tensor<1x6x5x3xi8>
  %ap = tensor.pad %ae low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %z : i8
  } : tensor<1x6x5x3xi8> to tensor<1x6x7x5xi8>
  %e2 = tensor.empty() : tensor<1x6x5x3xi32>
  %f2 = linalg.fill ins(%c0 : i32) outs(%e2 : tensor<1x6x5x3xi32>) -> tensor<1x6x5x3xi32>
  %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%ap, %wd : tensor<1x6x7x5xi8>, tensor<6x3x3xi8>) outs(%f2 : tensor<1x6x5x3xi32>) -> tensor<1x6x5x3xi32>
  %ed = tensor.empty() : tensor<1x6x5x3xi8>
  %dq = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%d : tensor<1x6x5x3xi32>) outs(%ed : tensor<1x6x5x3xi8>) {
  ^bb0(%in: i32, %o: i8):
    %t = arith.trunci %in : i32 to i8
    linalg.yield %t : i8
  } -> tensor<1x6x5x3xi8>
  %dc = tensor.collapse_shape %dq [[0], [1], [2, 3]] : tensor<1x6x5x3xi8> into tensor<1x6x15xi8>
  %de = tensor.expand_shape %dc [[0], [1], [2, 3]] output_shape [1, 6, 1, 15] : tensor<1x6x15xi8> into tensor<1x6x1x15xi8>
  %e3 = tensor.empty() : tensor<1x2x1x15xi32>
  %f3 = linalg.fill ins(%c0 : i32) outs(%e3 : tensor<1x2x1x15xi32>) -> tensor<1x2x1x15xi32>
  %b = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%de, %w2 : tensor<1x6x1x15xi8>, tensor<2x6x1x1xi8>) outs(%f3 : tensor<1x2x1x15xi32>) -> tensor<1x2x1x15xi32>
  return %b : tensor<1x2x1x15xi32>
}

// -----

// Not rewritten: the accumulators start from a tensor, not a fill (a
// bias broadcast would be a per-channel start; the fold never makes one).
// EXPLAIN: remark: linalg.depthwise_conv_2d_nchw_chw: not rewritten channels-last: the accumulator's init is not a fill
// CHECK-LABEL: func.func @init_not_a_fill(
// CHECK:         linalg.depthwise_conv_2d_nchw_chw
// CHECK-NOT:     linalg.transpose
func.func @init_not_a_fill(%x: tensor<1x2x3x3xi8>, %init: tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32> {
  %w = arith.constant dense<1> : tensor<2x2x2xi8>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x2x3x3xi8>, tensor<2x2x2xi8>) outs(%init : tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32>
  return %c : tensor<1x2x2x2xi32>
}

// -----

// Not rewritten: a filter that is not a constant, and a float convolution.
// EXPLAIN: remark: linalg.depthwise_conv_2d_nchw_chw: not rewritten channels-last: the filter is not a constant with known bytes
// EXPLAIN: remark: linalg.depthwise_conv_2d_nchw_chw: not rewritten channels-last: element types f32, f32, f32 (needs i8 x i8 -> i32)
// CHECK-LABEL: func.func @not_int8_constant(
// CHECK:         linalg.depthwise_conv_2d_nchw_chw
// CHECK:         linalg.depthwise_conv_2d_nchw_chw
func.func @not_int8_constant(%x: tensor<1x2x3x3xi8>, %w: tensor<2x2x2xi8>, %xf: tensor<1x2x3x3xf32>) -> (tensor<1x2x2x2xi32>, tensor<1x2x2x2xf32>) {
  %c0 = arith.constant 0 : i32
  %f0 = arith.constant 0.0 : f32
  %wf = arith.constant dense<1.0> : tensor<2x2x2xf32>
  %e = tensor.empty() : tensor<1x2x2x2xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x2x3x3xi8>, tensor<2x2x2xi8>) outs(%f : tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32>
  %ef = tensor.empty() : tensor<1x2x2x2xf32>
  %ff = linalg.fill ins(%f0 : f32) outs(%ef : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %cf = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%xf, %wf : tensor<1x2x3x3xf32>, tensor<2x2x2xf32>) outs(%ff : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %c, %cf : tensor<1x2x2x2xi32>, tensor<1x2x2x2xf32>
}
