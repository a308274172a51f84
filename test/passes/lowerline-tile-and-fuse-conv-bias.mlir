// A stride-1 convolution's bias, broadcast into its init (torch-mlir's form
// of nn.Conv2d's bias), joins the convolution's nest like a fill: each row
// tile starts from the bias, with no pass of its own writing the whole
// output first (which a batch-8 1x1 convolution over 112 x 112 planes read
// back from memory: 2x ONNX Runtime's time, bench/conv-layers.md).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t.err | FileCheck %s
// RUN: FileCheck %s --input-file=%t.err --check-prefix=EXPLAIN

// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill, linalg.generic;
// EXPLAIN-NOT: linalg.broadcast
// CHECK-LABEL: func.func @conv_bias_relu(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (2, 1, 2)
// CHECK:           scf.for
// CHECK:             linalg.broadcast {{.+}} outs(%{{.+}} : tensor<1x6x1x10xf32>)
// CHECK:             scf.for
// CHECK:               linalg.matmul
// CHECK:           linalg.generic
// CHECK:             arith.maximumf
// CHECK:         scf.forall.in_parallel
// CHECK-NOT:     linalg.broadcast
// CHECK:         return
func.func @conv_bias_relu(%x: tensor<2x5x12x12xf32>, %w: tensor<6x5x3x3xf32>, %b: tensor<6xf32>) -> tensor<2x6x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x6x10x10xf32>
  %bias = linalg.broadcast ins(%b : tensor<6xf32>) outs(%e : tensor<2x6x10x10xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<2x5x12x12xf32>, tensor<6x5x3x3xf32>) outs(%bias : tensor<2x6x10x10xf32>) -> tensor<2x6x10x10xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%c : tensor<2x6x10x10xf32>) outs(%e : tensor<2x6x10x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x6x10x10xf32>
  return %r : tensor<2x6x10x10xf32>
}

// -----

// Not fused: the broadcast bias is also a result, so it is computed once on
// its own (a vector group) and the convolution reads it.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused nothing;
// EXPLAIN: remark: linalg.broadcast: g1: vector tile
// CHECK-LABEL: func.func @shared_bias_stays_apart(
// CHECK:         %[[BIAS:.+]] = scf.for
// CHECK:           linalg.broadcast {{.+}} outs(%{{.+}} : tensor<1x1x1x10xf32>)
// CHECK:         scf.forall {{.+}} shared_outs(%{{.+}} = %[[BIAS]])
// CHECK-NOT:       linalg.broadcast
// CHECK:         return

func.func @shared_bias_stays_apart(%x: tensor<1x5x12x12xf32>, %w: tensor<6x5x3x3xf32>, %b: tensor<6xf32>) -> (tensor<1x6x10x10xf32>, tensor<1x6x10x10xf32>) {
  %e = tensor.empty() : tensor<1x6x10x10xf32>
  %bias = linalg.broadcast ins(%b : tensor<6xf32>) outs(%e : tensor<1x6x10x10xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<1x5x12x12xf32>, tensor<6x5x3x3xf32>) outs(%bias : tensor<1x6x10x10xf32>) -> tensor<1x6x10x10xf32>
  return %c, %bias : tensor<1x6x10x10xf32>, tensor<1x6x10x10xf32>
}

// -----

// A dynamic batch (lowerline.compile(..., dynamic=...)): the same nest, a
// forall over the runtime batch. Each fused op reads its loop bounds through
// tensor.dim of its init; those are resolved before the next producer is
// fused, or fusion clones the whole bias broadcast into the forall and the
// nest fails (every op of it left as scalar loops: the dynamic CNN of
// bench/dynamic.py at 1.3-1.9x its static specialization).
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill, linalg.generic;
// EXPLAIN-NOT: left as loops
// CHECK-LABEL: func.func @dynamic_batch_conv_bias_relu(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 1, 2) shared_outs(%{{.+}}) -> (tensor<?x6x10x10xf32>)
// CHECK-NOT:       tensor<?x6x10x10xf32>) dimensions
// CHECK:           scf.for
// CHECK:             linalg.broadcast {{.+}} outs(%{{.+}} : tensor<1x6x1x10xf32>)
// CHECK:             scf.for
// CHECK:               linalg.matmul
// CHECK:           linalg.generic
// CHECK:             arith.maximumf
// CHECK:         scf.forall.in_parallel
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         return
func.func @dynamic_batch_conv_bias_relu(%x: tensor<?x5x12x12xf32>, %w: tensor<6x5x3x3xf32>, %b: tensor<6xf32>) -> tensor<?x6x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x5x12x12xf32>
  %e = tensor.empty(%n) : tensor<?x6x10x10xf32>
  %bias = linalg.broadcast ins(%b : tensor<6xf32>) outs(%e : tensor<?x6x10x10xf32>) dimensions = [0, 2, 3]
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<?x5x12x12xf32>, tensor<6x5x3x3xf32>) outs(%bias : tensor<?x6x10x10xf32>) -> tensor<?x6x10x10xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%c : tensor<?x6x10x10xf32>) outs(%e : tensor<?x6x10x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<?x6x10x10xf32>
  return %r : tensor<?x6x10x10xf32>
}

// -----

// The same for a window nest (a depthwise convolution, whose bias joined
// its nest before stride-1 convolutions' did).
// EXPLAIN: remark: linalg.depthwise_conv_2d_nchw_chw: g0: window; fused fill, linalg.generic;
// EXPLAIN-NOT: left as loops
// CHECK-LABEL: func.func @dynamic_batch_depthwise_bias_relu(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 4, 2) shared_outs(%{{.+}}) -> (tensor<?x8x12x12xf32>)
// CHECK:           linalg.broadcast {{.+}} outs(%{{.+}} : tensor<1x2x6x12xf32>)
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               linalg.generic
// CHECK:           linalg.generic
// CHECK:             arith.maximumf
// CHECK:         scf.forall.in_parallel
// CHECK-NOT:     linalg.depthwise_conv_2d_nchw_chw
// CHECK:         return
func.func @dynamic_batch_depthwise_bias_relu(%x: tensor<?x8x14x14xf32>, %w: tensor<8x3x3xf32>, %b: tensor<8xf32>) -> tensor<?x8x12x12xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8x14x14xf32>
  %e = tensor.empty(%n) : tensor<?x8x12x12xf32>
  %bias = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e : tensor<?x8x12x12xf32>) dimensions = [0, 2, 3]
  %c = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
    ins(%x, %w : tensor<?x8x14x14xf32>, tensor<8x3x3xf32>) outs(%bias : tensor<?x8x12x12xf32>) -> tensor<?x8x12x12xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%c : tensor<?x8x12x12xf32>) outs(%e : tensor<?x8x12x12xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<?x8x12x12xf32>
  return %r : tensor<?x8x12x12xf32>
}
