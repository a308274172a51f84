// A convolution whose output channel count has no divisor filling half the
// register tile (53, prime) is tiled by the channel count up to the limit
// that leaves the fewest over (13: four tiles, 1 left); the channel left is
// peeled and computed in static one-channel tiles. Before, every tile was
// one channel (the largest divisor), a load of the input row for every two
// FMAs (1.8x ONNX Runtime's time, bench/conv-layers.md).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t.err | FileCheck %s
// RUN: FileCheck %s --input-file=%t.err --check-prefix=EXPLAIN

// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill, linalg.generic; tiles: parallel 13 channels x 1 rows, registers 13 channels x 32 columns, masked, last 1 channel(s) one at a time,
// CHECK-LABEL: func.func @prime_channels_peel_the_channel_left(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 5, 1)
// The full channel tiles: the full column tile (its one iteration folded)
// and the partial one, both static.
// CHECK:           scf.for
// CHECK:             linalg.broadcast {{.+}} outs(%{{.+}} : tensor<1x13x1x32xf32>)
// CHECK:             linalg.matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<13x1xf32>, tensor<1x32xf32>)
// CHECK:             linalg.generic
// CHECK:             linalg.matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<13x1xf32>, tensor<1x8xf32>)
// The channel left: one channel at a time, full and partial columns.
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               linalg.broadcast {{.+}} outs(%{{.+}} : tensor<1x1x1x32xf32>)
// CHECK:               linalg.matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x1xf32>, tensor<1x32xf32>)
// CHECK:               linalg.generic
// CHECK:             scf.for
// CHECK:               linalg.matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x1xf32>, tensor<1x8xf32>)
// CHECK-NOT:     linalg.matmul
// CHECK:         scf.forall.in_parallel
// CHECK:         return
func.func @prime_channels_peel_the_channel_left(%x: tensor<1x5x1x40xf32>, %w: tensor<53x5x1x1xf32>, %b: tensor<53xf32>) -> tensor<1x53x1x40xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x53x1x40xf32>
  %bias = linalg.broadcast ins(%b : tensor<53xf32>) outs(%e : tensor<1x53x1x40xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x5x1x40xf32>, tensor<53x5x1x1xf32>) outs(%bias : tensor<1x53x1x40xf32>) -> tensor<1x53x1x40xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%c : tensor<1x53x1x40xf32>) outs(%e : tensor<1x53x1x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x53x1x40xf32>
  return %r : tensor<1x53x1x40xf32>
}

// -----

// Without an epilogue or a mask: the conv (its fill tiled apart) is the
// nest's last op; 31 channels in tiles of 10, the one left peeled.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill; tiles: parallel 10 channels x 2 rows, registers 10 channels x 32 columns, last 1 channel(s) one at a time,
// CHECK-LABEL: func.func @prime_channels_without_epilogue(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 4, 1)
// CHECK:           linalg.matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<10x1xf32>, tensor<1x32xf32>)
// CHECK:           linalg.matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x1xf32>, tensor<1x32xf32>)
// CHECK-NOT:       linalg.matmul
// CHECK:         return
func.func @prime_channels_without_epilogue(%x: tensor<1x3x4x34xf32>, %w: tensor<31x3x3x3xf32>) -> tensor<1x31x2x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x31x2x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x31x2x32xf32>) -> tensor<1x31x2x32xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x3x4x34xf32>, tensor<31x3x3x3xf32>) outs(%f : tensor<1x31x2x32xf32>) -> tensor<1x31x2x32xf32>
  return %c : tensor<1x31x2x32xf32>
}

// -----

// Not firing: 64 channels are whole tiles of 8 (a divisor filling more than
// half the register tile); no channel is left.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill; tiles: parallel 8 channels x 1 rows, registers 8 channels x 32 columns, (c, kh, kw) loops of 1;
// CHECK-LABEL: func.func @divisor_channels_leave_none(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 8, 1)
// CHECK:           linalg.matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<8x1xf32>, tensor<1x32xf32>)
// CHECK-NOT:       linalg.matmul
// CHECK:         return
func.func @divisor_channels_leave_none(%x: tensor<1x5x1x64xf32>, %w: tensor<64x5x1x1xf32>) -> tensor<1x64x1x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x64x1x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x64x1x64xf32>) -> tensor<1x64x1x64xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x5x1x64xf32>, tensor<64x5x1x1xf32>) outs(%f : tensor<1x64x1x64xf32>) -> tensor<1x64x1x64xf32>
  return %c : tensor<1x64x1x64xf32>
}

// -----

// A dense stride-2 convolution (a window nest: one input row for all the
// tile's channels) to 31 channels: tiles of 15, the one left peeled, one
// channel at a time; each tile an elementwise step over its window.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: window; fused fill, linalg.generic; tiles: parallel 15 channels x 4 rows, registers 15 channels x 16 columns, last 1 channel(s) one at a time,
// CHECK-LABEL: func.func @strided_prime_channels(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 3, 1)
// CHECK:           linalg.generic {{.+}} outs(%{{.+}} : tensor<15x16xf32>)
// CHECK:           scf.for
// CHECK:             linalg.generic {{.+}} outs(%{{.+}} : tensor<16xf32>)
// CHECK:         return
func.func @strided_prime_channels(%x: tensor<1x3x9x33xf32>, %w: tensor<31x3x3x3xf32>) -> tensor<1x31x4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x31x4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x31x4x16xf32>) -> tensor<1x31x4x16xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %w : tensor<1x3x9x33xf32>, tensor<31x3x3x3xf32>) outs(%f : tensor<1x31x4x16xf32>) -> tensor<1x31x4x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%c : tensor<1x31x4x16xf32>) outs(%e : tensor<1x31x4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x31x4x16xf32>
  return %r : tensor<1x31x4x16xf32>
}
