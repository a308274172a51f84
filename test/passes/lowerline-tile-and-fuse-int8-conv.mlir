// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --input-file=%t.remarks --check-prefix=EXPLAIN
// Without an int8 dot product (haswell: no VNNI), input channels step by 1 (outer products).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=haswell})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PORTABLE

// The i8 x i8 -> i32 convolution of lowerline-fold-qdq-conv (stride 1, 8
// input channels) is planned as its i32 accumulator, its fill and
// requantize epilogue fused; each register tile steps 4 input channels at a
// time: matmul tiles K = 4 deep, which lowerline-vectorize makes vpdpbusd.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill, linalg.generic; tiles: parallel 8 channels x 4 rows, registers 8 channels x 32 columns, partial tile as 16 + 2 columns, (c, kh, kw) loops of 4, 1, 1
// CHECK-LABEL: func.func @dot_product_steps_of_four_channels(
// CHECK:         scf.forall
// CHECK:           linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 4>} ins(%{{.+}}, %{{.+}} : tensor<8x4xi8>, tensor<4x16xi8>)
// CHECK:           linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 4>} ins(%{{.+}}, %{{.+}} : tensor<8x4xi8>, tensor<4x2xi8>)
// CHECK:           linalg.generic
// CHECK:             math.roundeven
// PORTABLE-LABEL: func.func @dot_product_steps_of_four_channels(
// PORTABLE:         linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 4, 16, 1>} ins(%{{.+}}, %{{.+}} : tensor<4x1xi8>, tensor<1x16xi8>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @dot_product_steps_of_four_channels(%x: tensor<1x8x6x20xi8>, %w: tensor<8x8x3x3xi8>, %m: tensor<8xf32>) -> tensor<1x8x4x18xi8> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x8x4x18xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x8x4x18xi32>) -> tensor<1x8x4x18xi32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x8x6x20xi8>, tensor<8x8x3x3xi8>) outs(%f : tensor<1x8x4x18xi32>) -> tensor<1x8x4x18xi32>
  %e2 = tensor.empty() : tensor<1x8x4x18xi8>
  %r = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %m : tensor<1x8x4x18xi32>, tensor<8xf32>) outs(%e2 : tensor<1x8x4x18xi8>) {
  ^bb0(%a: i32, %s: f32, %o: i8):
    %0 = arith.sitofp %a : i32 to f32
    %1 = arith.mulf %0, %s : f32
    %2 = math.roundeven %1 : f32
    %3 = arith.fptosi %2 : f32 to i8
    linalg.yield %3 : i8
  } -> tensor<1x8x4x18xi8>
  return %r : tensor<1x8x4x18xi8>
}

// -----

// 6 input channels: no whole steps of 4, so steps of 1 (outer products)
// even with VNNI.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill; tiles: parallel 4 channels x 3 rows, registers 4 channels x 16 columns, partial tile as 4 + 2 + 1 columns, (c, kh, kw) loops of 1;
// CHECK-LABEL: func.func @odd_channels_step_by_one(
// CHECK:         linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 4, 16, 1>} ins(%{{.+}}, %{{.+}} : tensor<4x1xi8>, tensor<1x4xi8>)
func.func @odd_channels_step_by_one(%x: tensor<1x6x5x9xi8>, %w: tensor<4x6x3x3xi8>) -> tensor<1x4x3x7xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x4x3x7xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x3x7xi32>) -> tensor<1x4x3x7xi32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x6x5x9xi8>, tensor<4x6x3x3xi8>) outs(%f : tensor<1x4x3x7xi32>) -> tensor<1x4x3x7xi32>
  return %c : tensor<1x4x3x7xi32>
}

// -----

// An integer depthwise convolution is a window nest, as a float one (its
// register tile 4 channels x all 3 output rows).
// EXPLAIN: remark: linalg.depthwise_conv_2d_nchw_chw: g0: window; fused fill; tiles: parallel 4 channels x 3 rows
// CHECK-LABEL: func.func @depthwise_is_a_window_nest(
// CHECK:         scf.forall
// CHECK:           linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<4x3x7xi8>, tensor<4xi8>)
func.func @depthwise_is_a_window_nest(%x: tensor<1x4x5x9xi8>, %w: tensor<4x3x3xi8>) -> tensor<1x4x3x7xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x4x3x7xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x3x7xi32>) -> tensor<1x4x3x7xi32>
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x4x5x9xi8>, tensor<4x3x3xi8>) outs(%f : tensor<1x4x3x7xi32>) -> tensor<1x4x3x7xi32>
  return %c : tensor<1x4x3x7xi32>
}

// -----

// A 1x1 stride-2 convolution of 8 input channels is planned like a
// stride-1 one: its register tiles are 4-deep matmul tiles whose B is every
// 2nd column of the tile's input row (a strided slice), for vpdpbusd.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill; tiles: parallel 8 channels x 5 rows, registers 8 channels x 32 columns, partial tile as 16 + 4 + 1 columns, (c, kh, kw) loops of 4, 1, 1
// CHECK-LABEL: func.func @strided_pointwise_steps_of_four_channels(
// CHECK:         scf.forall
// CHECK:           %[[ROW:.+]] = tensor.extract_slice %{{.+}}[0, 0, 0, 0] [1, 4, 1, 16] [1, 1, 1, 2] : tensor<1x4x1x31xi8> to tensor<4x16xi8>
// CHECK:           linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 4>} ins(%{{.+}}, %[[ROW]] : tensor<8x4xi8>, tensor<4x16xi8>)
// CHECK:           linalg.matmul {{.*}} ins(%{{.+}}, %{{.+}} : tensor<8x4xi8>, tensor<4x4xi8>)
// CHECK:           linalg.matmul {{.*}} ins(%{{.+}}, %{{.+}} : tensor<8x4xi8>, tensor<4x1xi8>)
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         return
// PORTABLE-LABEL: func.func @strided_pointwise_steps_of_four_channels(
// PORTABLE-NOT:     linalg.matmul
// PORTABLE:         linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<16xi8>, tensor<4xi8>)
func.func @strided_pointwise_steps_of_four_channels(%x: tensor<1x8x9x41xi8>, %w: tensor<8x8x1x1xi8>) -> tensor<1x8x5x21xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x8x5x21xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x8x5x21xi32>) -> tensor<1x8x5x21xi32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x8x9x41xi8>, tensor<8x8x1x1xi8>) outs(%f : tensor<1x8x5x21xi32>) -> tensor<1x8x5x21xi32>
  return %c : tensor<1x8x5x21xi32>
}

// -----

// Strided 3x3 (8 input channels: its 4-deep tiles measured slower than the
// window nest), stride 2 with 6 input channels (no whole steps of 4), and a
// dilated convolution: window nests, as before.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: window; fused fill; tiles: parallel 4 channels x 4 rows
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g1: window; fused fill;
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g2: window; fused fill;
// CHECK-LABEL: func.func @strided_window_odd_channels_and_dilated_stay_windows(
// CHECK-NOT:     linalg.matmul
// CHECK:         linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<4xi8>, tensor<4xi8>)
// CHECK-NOT:     linalg.matmul
// CHECK:         return
func.func @strided_window_odd_channels_and_dilated_stay_windows(%x: tensor<1x6x9x9xi8>, %w: tensor<4x6x3x3xi8>, %y: tensor<1x8x9x9xi8>, %v: tensor<8x8x3x3xi8>) -> (tensor<1x4x4x4xi32>, tensor<1x8x5x5xi32>, tensor<1x8x4x4xi32>) {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x4x4x4xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x4x4xi32>) -> tensor<1x4x4x4xi32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x6x9x9xi8>, tensor<4x6x3x3xi8>) outs(%f : tensor<1x4x4x4xi32>) -> tensor<1x4x4x4xi32>
  %e2 = tensor.empty() : tensor<1x8x5x5xi32>
  %f2 = linalg.fill ins(%c0 : i32) outs(%e2 : tensor<1x8x5x5xi32>) -> tensor<1x8x5x5xi32>
  %d = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%y, %v : tensor<1x8x9x9xi8>, tensor<8x8x3x3xi8>) outs(%f2 : tensor<1x8x5x5xi32>) -> tensor<1x8x5x5xi32>
  %e3 = tensor.empty() : tensor<1x8x4x4xi32>
  %f3 = linalg.fill ins(%c0 : i32) outs(%e3 : tensor<1x8x4x4xi32>) -> tensor<1x8x4x4xi32>
  %s = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%y, %v : tensor<1x8x9x9xi8>, tensor<8x8x3x3xi8>) outs(%f3 : tensor<1x8x4x4xi32>) -> tensor<1x8x4x4xi32>
  return %c, %d, %s : tensor<1x4x4x4xi32>, tensor<1x8x5x5xi32>, tensor<1x8x4x4xi32>
}

// -----

// A 1x1 stride-2 convolution whose output rows (5 columns) are narrower than
// the dot product's 16 lanes: a window nest (one-row dot tiles measured slower).
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: window; fused fill;
// CHECK-LABEL: func.func @strided_pointwise_narrow_rows_stay_windows(
// CHECK-NOT:     linalg.matmul
// CHECK:         linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<5xi8>, tensor<8xi8>)
// CHECK-NOT:     linalg.matmul
// CHECK:         return
func.func @strided_pointwise_narrow_rows_stay_windows(%x: tensor<1x8x9x9xi8>, %w: tensor<8x8x1x1xi8>) -> tensor<1x8x5x5xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x8x5x5xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x8x5x5xi32>) -> tensor<1x8x5x5xi32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x8x9x9xi8>, tensor<8x8x1x1xi8>) outs(%f : tensor<1x8x5x5xi32>) -> tensor<1x8x5x5xi32>
  return %c : tensor<1x8x5x5xi32>
}
