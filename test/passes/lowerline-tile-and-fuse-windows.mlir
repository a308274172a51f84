// Pooling and depthwise, grouped, strided and dilated convolutions: a window
// nest each. A parallel scf.forall over (batch, channel blocks, row blocks);
// register tiles of channels x output columns (whole vectors: 16 lanes on
// Sapphire Rapids); the window (and input channel) loops of step 1, each
// step an elementwise linalg.generic on rank-reduced slices, strided where
// the window is. lowerline-vectorize then makes vectors of the register
// tile, with the accumulators carried through the window loops.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t.err | FileCheck %s
// RUN: FileCheck %s --input-file=%t.err --check-prefix=EXPLAIN
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize,canonicalize)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=VEC

// A 3x3 stride-2 max pool (torch-mlir pads with -inf and fills the init with
// it): the fill is fused, each window step reads every second input column
// of every second input row. Its 7-wide rows are tiles of 8 lanes (the power
// of two that holds them), not 16; a register tile is 1 channel x all 7
// rows of the parallel tile. The kw loop is gone: its 3 taps (offsets 0, 1
// and 2 of the same rows) are one step, one generic with the pool's body
// once per tap.
// EXPLAIN: remark: linalg.pooling_nchw_max: g0: window; fused fill; tiles: parallel 1 channels x 7 rows, registers 1 channels x 7 rows x 8 columns, masked, (c, kh) loops of 1, 3 kw taps per step from one row read
// CHECK-LABEL: func.func @max_pool_stride_2(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (2, 8, 1)
// CHECK:           linalg.fill
// CHECK:           scf.for
// CHECK-NOT:         scf.for
// CHECK:             %[[IN0:.+]] = tensor.extract_slice %[[ROWS:[a-z_0-9]+]][0, 0, 0, 0] [1, 1, 7, 7] [1, 1, 2, 2] : tensor<1x1x13x15xf32> to tensor<7x7xf32>
// CHECK:             %[[IN1:.+]] = tensor.extract_slice %[[ROWS]][0, 0, 0, 1] [1, 1, 7, 7] [1, 1, 2, 2]
// CHECK:             %[[IN2:.+]] = tensor.extract_slice %[[ROWS]][0, 0, 0, 2] [1, 1, 7, 7] [1, 1, 2, 2]
// CHECK:             linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]} ins(%[[IN0]], %{{.+}}, %[[IN1]], %{{.+}}, %[[IN2]], %{{.+}} : {{.+}} {lowerline.vector_sizes = array<i64: 7, 8>}
// CHECK:               %[[M0:.+]] = arith.maximumf %{{.+}}, %{{.+}} : f32
// CHECK:               %[[M1:.+]] = arith.maximumf %[[M0]], %{{.+}} : f32
// CHECK:               %[[M2:.+]] = arith.maximumf %[[M1]], %{{.+}} : f32
// CHECK:               linalg.yield %[[M2]]
// CHECK-NOT:     linalg.pooling_nchw_max
// CHECK:         return
// The accumulators start from the fill's -inf vector itself, not from the
// tile written and read back (lowerline-vectorize forwards it).
// VEC-LABEL: func.func @max_pool_stride_2(
// VEC:         %[[NINF:.+]] = arith.constant dense<0xFF800000> : vector<7x8xf32>
// VEC:         scf.forall
// VEC-NOT:       vector.transfer_read {{.+}} : tensor<7x7xf32>, vector<7x8xf32>
// VEC:           scf.for {{.+}} iter_args(%{{.+}} = %[[NINF]]) -> (vector<7x8xf32>)
// VEC-NOT:         scf.for
// The stride-2 input rows: one contiguous read per row for the 3 taps, a
// power-of-two count of 8-lane tiles (lanes 0-16 of it hold the taps'
// columns; past the row's 15 columns, padding; the rows keep their stride
// of 2), each tap a shuffle of it.
// VEC:             %[[WIDE:.+]] = vector.transfer_read {{.+}} {in_bounds = [true, false]} : tensor<7x15xf32>, vector<7x32xf32>
// VEC-NOT:         vector.transfer_read
// VEC:             %[[ROW:.+]] = vector.extract %[[WIDE]][0] : vector<32xf32> from vector<7x32xf32>
// VEC:             vector.shuffle %[[ROW]], %[[ROW]] [0, 2, 4, 6, 8, 10, 12, 14] :
// VEC:             vector.shuffle %{{.+}}, %{{.+}} [1, 3, 5, 7, 9, 11, 13, 15] :
// VEC:             vector.shuffle %{{.+}}, %{{.+}} [2, 4, 6, 8, 10, 12, 14, 16] :
// VEC-NOT:         vector.transfer_read
// VEC:             arith.maximumf %{{.+}}, %{{.+}} : vector<7x8xf32>
// VEC-NOT:     linalg.pooling_nchw_max
func.func @max_pool_stride_2(%x: tensor<2x8x15x15xf32>) -> tensor<2x8x7x7xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x8x7x7xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x8x7x7xf32>) -> tensor<2x8x7x7xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %r = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %w : tensor<2x8x15x15xf32>, tensor<3x3xf32>) outs(%f : tensor<2x8x7x7xf32>) -> tensor<2x8x7x7xf32>
  return %r : tensor<2x8x7x7xf32>
}

// -----

// A depthwise 3x3 convolution with its bias (a broadcast into the init) and
// ReLU: both fused; 40 columns are a 32-column tile and the 8 left, peeled
// into static tiles of their own (their accumulators stay in registers). A
// register tile is 4 output rows of one channel: the channel's bias and each
// step's weight are one scalar for the whole tile.
// A stride-1 row reads each tap's columns contiguously: the kw loop stays a
// loop of steps of 1.
// EXPLAIN: remark: linalg.depthwise_conv_2d_nchw_chw: g0: window; fused fill, linalg.generic; tiles: parallel 1 channels x 8 rows, registers 1 channels x 4 rows x 32 columns, masked, (c, kh, kw) loops of 1;
// EXPLAIN-NOT: left as loops
// CHECK-LABEL: func.func @depthwise_bias_relu(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (1, 12, 5)
// CHECK:           scf.for
// CHECK:             linalg.broadcast {{.+}} outs(%{{.+}} : tensor<1x1x4x32xf32>)
// CHECK:             scf.for
// CHECK:               scf.for
// CHECK:                 linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<4x32xf32>, tensor<f32>) outs(%{{.+}} : tensor<4x32xf32>) {{.+}} {lowerline.vector_sizes = array<i64: 4, 32>}
// CHECK:                   arith.mulf
// CHECK:                   arith.addf
// CHECK:             linalg.generic
// CHECK:               arith.maximumf
// CHECK:             linalg.broadcast {{.+}} outs(%{{.+}} : tensor<1x1x4x8xf32>)
// CHECK:                 linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<f32>) outs(%{{.+}} : tensor<4x8xf32>)
// CHECK-NOT:     linalg.depthwise_conv_2d_nchw_chw
// CHECK:         return
// VEC-LABEL: func.func @depthwise_bias_relu(
// VEC:           scf.for {{.+}} -> (vector<4x32xf32>)
// The multiply and add may become one FMA (fastmath<contract>).
// VEC:             arith.mulf %{{[^ ]+}}, %{{[^ ]+}} fastmath<contract> : vector<4x32xf32>
// VEC:             arith.addf %{{[^ ]+}}, %{{[^ ]+}} fastmath<contract> : vector<4x32xf32>
// VEC:           arith.maximumf %{{.+}}, %{{.+}} : vector<4x32xf32>
// VEC:           scf.for {{.+}} -> (vector<4x8xf32>)
// VEC-NOT:     linalg.
func.func @depthwise_bias_relu(%x: tensor<1x12x42x42xf32>, %w: tensor<12x3x3xf32>, %b: tensor<12xf32>) -> tensor<1x12x40x40xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x12x40x40xf32>
  %bias = linalg.broadcast ins(%b : tensor<12xf32>) outs(%e : tensor<1x12x40x40xf32>) dimensions = [0, 2, 3]
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x12x42x42xf32>, tensor<12x3x3xf32>) outs(%bias : tensor<1x12x40x40xf32>) -> tensor<1x12x40x40xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%c : tensor<1x12x40x40xf32>) outs(%e : tensor<1x12x40x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x12x40x40xf32>
  return %r : tensor<1x12x40x40xf32>
}

// -----

// A grouped, dilated convolution: per group, output channels x columns
// updated from one input column per (c, kh, kw) step.
// Dilated but not strided: its kw loop stays a loop too.
// EXPLAIN: remark: linalg.conv_2d_ngchw_gfchw: g0: window; fused fill; tiles: parallel 4 channels x 7 rows, registers 4 channels x 8 columns, masked, (c, kh, kw) loops of 1;
// CHECK-LABEL: func.func @grouped_dilated(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) in (1, 2, 1, 1)
// CHECK:           linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<7xf32>, tensor<4xf32>) outs(%{{.+}} : tensor<4x7xf32>) {{.+}} {lowerline.vector_sizes = array<i64: 4, 8>}
// CHECK-NOT:     linalg.conv_2d_ngchw_gfchw
// VEC-LABEL: func.func @grouped_dilated(
// VEC:             scf.for {{.+}} -> (vector<4x8xf32>)
// VEC:               arith.mulf %{{.+}}, %{{.+}} : vector<4x8xf32>
// VEC-NOT:     linalg.conv_2d_ngchw_gfchw
func.func @grouped_dilated(%x: tensor<1x2x3x11x11xf32>, %w: tensor<2x4x3x3x3xf32>) -> tensor<1x2x4x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x7x7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x4x7x7xf32>) -> tensor<1x2x4x7x7xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x2x3x11x11xf32>, tensor<2x4x3x3x3xf32>) outs(%f : tensor<1x2x4x7x7xf32>) -> tensor<1x2x4x7x7xf32>
  return %r : tensor<1x2x4x7x7xf32>
}

// -----

// A stride-2 dense convolution is a window nest too (the stride-1 one keeps
// the rank-1 update kernel, lowerline-tile-and-fuse.mlir). Its input row
// serves all 8 channels of the tile: the kw loop stays a loop, each tap
// reading its own row segment.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: window; fused fill; tiles: parallel 8 channels x 8 rows, registers 8 channels x 8 columns, (c, kh, kw) loops of 1;
// CHECK-LABEL: func.func @conv_stride_2(
// CHECK:         tensor.extract_slice {{.+}} [1, 1, 1, 8] [1, 1, 1, 2] : tensor<1x1x1x15xf32> to tensor<8xf32>
// CHECK:         linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<8xf32>, tensor<8xf32>) outs(%{{.+}} : tensor<8x8xf32>)
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK-NOT:     linalg.matmul
// The input row every output channel of the tile reads: one contiguous read
// and a shuffle, then broadcast to the channels.
// VEC-LABEL: func.func @conv_stride_2(
// VEC:           %[[ROW:.+]] = vector.transfer_read %{{.+}}[%{{.+}}], %{{.+}} : tensor<15xf32>, vector<16xf32>
// VEC:           vector.shuffle %[[ROW]], %[[ROW]] [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xf32>, vector<16xf32>
// VEC:           arith.mulf %{{[^ ]+}}, %{{[^ ]+}} fastmath<contract> : vector<8x8xf32>
// VEC:           arith.addf %{{[^ ]+}}, %{{[^ ]+}} fastmath<contract> : vector<8x8xf32>
func.func @conv_stride_2(%x: tensor<1x3x21x21xf32>, %w: tensor<8x3x7x7xf32>) -> tensor<1x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %w : tensor<1x3x21x21xf32>, tensor<8x3x7x7xf32>) outs(%f : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}

// -----

// Register tiles of a dense strided convolution hold twice the accumulators of a
// depthwise one's: every channel of the tile reads the same input row (a
// rank-1 update: 8 x 2 accumulators), where a depthwise step reads a row
// per output row (1 channel x 4 rows x 2 vectors of accumulators). The
// depthwise one's 3 kw taps are one step, one read of the row's 65 columns
// (5 vectors of 16) per input row, which the plan counts with the
// accumulators (4 x (2 + 5)); the dense one's row read serves 8 channels,
// its taps stay a loop.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: window; fused fill; tiles: parallel 8 channels x 8 rows, registers 8 channels x 32 columns, (c, kh, kw) loops of 1;
// EXPLAIN: remark: linalg.depthwise_conv_2d_nchw_chw: g1: window; fused fill; tiles: parallel 1 channels x 8 rows, registers 1 channels x 4 rows x 32 columns, (c, kh) loops of 1, 3 kw taps per step from one row read
// CHECK-LABEL: func.func @shared_input_rows_take_more_channels(
func.func @shared_input_rows_take_more_channels(%x: tensor<1x64x66x66xf32>, %w: tensor<64x64x3x3xf32>, %dw: tensor<64x3x3xf32>)
    -> (tensor<1x64x32x32xf32>, tensor<1x64x32x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x64x32x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x64x32x32xf32>) -> tensor<1x64x32x32xf32>
  %dense = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %w : tensor<1x64x66x66xf32>, tensor<64x64x3x3xf32>) outs(%f : tensor<1x64x32x32xf32>) -> tensor<1x64x32x32xf32>
  %e2 = tensor.empty() : tensor<1x64x32x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x64x32x32xf32>) -> tensor<1x64x32x32xf32>
  %depthwise = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %dw : tensor<1x64x66x66xf32>, tensor<64x3x3xf32>) outs(%f2 : tensor<1x64x32x32xf32>) -> tensor<1x64x32x32xf32>
  return %dense, %depthwise : tensor<1x64x32x32xf32>, tensor<1x64x32x32xf32>
}

// -----

// A dynamic batch (lowerline.compile(..., dynamic=...)) is planned: the
// forall tiles the batch by 1, so every register tile is static.
// EXPLAIN: remark: linalg.pooling_nchw_sum: g0: window
// CHECK-LABEL: func.func @dynamic_batch_pool_is_tiled(
// CHECK:         scf.forall (%{{.+}}) in (%{{.+}}, 8, 1)
// CHECK:           linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<7x7xf32>, tensor<f32>, tensor<7x7xf32>
// CHECK-NOT:     linalg.pooling_nchw_sum
func.func @dynamic_batch_pool_is_tiled(%x: tensor<?x8x15x15xf32>, %init: tensor<?x8x7x7xf32>) -> tensor<?x8x7x7xf32> {
  %w = tensor.empty() : tensor<3x3xf32>
  %r = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %w : tensor<?x8x15x15xf32>, tensor<3x3xf32>) outs(%init : tensor<?x8x7x7xf32>) -> tensor<?x8x7x7xf32>
  return %r : tensor<?x8x7x7xf32>
}

// -----

// Not planned: dynamic channels (no static register tiles to choose).
// EXPLAIN: remark: linalg.pooling_nchw_sum: left as loops: dynamic shapes other than the batch
// CHECK-LABEL: func.func @dynamic_channels_pool_stays(
// CHECK-NOT:     scf.forall
// CHECK:         linalg.pooling_nchw_sum
func.func @dynamic_channels_pool_stays(%x: tensor<1x?x15x15xf32>, %init: tensor<1x?x7x7xf32>) -> tensor<1x?x7x7xf32> {
  %w = tensor.empty() : tensor<3x3xf32>
  %r = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %w : tensor<1x?x15x15xf32>, tensor<3x3xf32>) outs(%init : tensor<1x?x7x7xf32>) -> tensor<1x?x7x7xf32>
  return %r : tensor<1x?x7x7xf32>
}

// -----

// Not a window nest: a stride-1 dense convolution keeps the rank-1 update
// kernel (its register tiles become matmuls).
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill
// CHECK-LABEL: func.func @dense_conv_stays_a_conv_nest(
// CHECK:         linalg.matmul
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @dense_conv_stays_a_conv_nest(%x: tensor<1x3x18x18xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x3x18x18xf32>, tensor<8x3x3x3xf32>) outs(%f : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  return %r : tensor<1x8x16x16xf32>
}

// -----

// A ResNet downsampling block's add reads a stride-1 convolution (a conv
// nest) and the stride-2 1x1 projection (a window nest): only the first
// nest fuses it, the other stops its epilogue before it.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill, linalg.generic
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g1: window; fused fill; tiles
// EXPLAIN: remark: linalg.generic: not fused into g1: another nest fused it
// EXPLAIN-NOT: left as loops
// CHECK-LABEL: func.func @shared_epilogue_fused_once(
// CHECK:         %[[SHORT:.+]] = scf.forall
// CHECK:           linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<16xf32>, tensor<8xf32>)
// CHECK:         scf.forall
// CHECK:           linalg.matmul
// CHECK:           arith.addf
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         return
func.func @shared_epilogue_fused_once(%y: tensor<1x8x18x18xf32>, %w: tensor<8x8x3x3xf32>,
                                      %x: tensor<1x4x31x31xf32>, %p: tensor<8x4x1x1xf32>) -> tensor<1x8x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %main = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%y, %w : tensor<1x8x18x18xf32>, tensor<8x8x3x3xf32>) outs(%f : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %short = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
    ins(%x, %p : tensor<1x4x31x31xf32>, tensor<8x4x1x1xf32>) outs(%f2 : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%main, %short : tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) outs(%e : tensor<1x8x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x8x16x16xf32>
  return %r : tensor<1x8x16x16xf32>
}

// -----

// Global pooling: a sum over a 56 x 56 plane is reduced a row at a time into
// partial sums of whole vectors (64 lanes: one vector per 16 columns), not
// one vector<3136xf32>.
// EXPLAIN: remark: linalg.generic: g1: vector tile [1, 1, 0, 0], reduced in chunks [0, 0, 1, 64]
// CHECK-LABEL: func.func @global_sum_is_reduced_by_rows(
// CHECK:         linalg.fill {lowerline.vector_sizes = array<i64: 1, 1, 1, 64>} {{.+}} -> tensor<1x1x1x64xf32>
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<1x1x1x64xf32>)
// CHECK:         linalg.reduce {{.+}} dimensions = [2, 3]  {lowerline.vector_sizes = array<i64: 1, 1, 1, 64>}
func.func @global_sum_is_reduced_by_rows(%x: tensor<2x4x56x56xf32>) -> tensor<2x4x1x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x1x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x1x1xf32>) -> tensor<2x4x1x1xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
    ins(%x : tensor<2x4x56x56xf32>) outs(%f : tensor<2x4x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<2x4x1x1xf32>
  return %r : tensor<2x4x1x1xf32>
}

// -----

// A 7 x 7 plane (ResNet's last pooling) fits one step of partial sums: one vector.
// EXPLAIN: remark: linalg.generic: g1: vector tile [1, 1, 0, 0] [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @small_plane_stays_one_vector(
// CHECK-NOT:     linalg.reduce
// CHECK:         return
func.func @small_plane_stays_one_vector(%x: tensor<2x4x7x7xf32>) -> tensor<2x4x1x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x1x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x1x1xf32>) -> tensor<2x4x1x1xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
    ins(%x : tensor<2x4x7x7xf32>) outs(%f : tensor<2x4x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<2x4x1x1xf32>
  return %r : tensor<2x4x1x1xf32>
}
