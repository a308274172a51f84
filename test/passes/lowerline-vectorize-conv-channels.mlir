// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-vectorize-conv-channels{target=znver4}))" \
// RUN:   --split-input-file | FileCheck %s

// A 3x3 stride-2 convolution with 32 output channels and a bias: one
// register tile per output row of 2 x 16 channels x 5 columns, the filter
// packed as [F / 16, C, KH, KW, 16], each step a broadcast input element
// times the packed channel vectors; the tile transposed into channel rows
// by shuffles, the ReLU applied to each row stored.
// CHECK-LABEL: func.func @stride_2_with_bias_and_relu(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<1x16x11x11xf32>, %[[B:[^:]+]]: tensor<1x32x5x5xf32>
// CHECK:         %[[WP:.+]] = arith.constant {{.*}} : tensor<2x16x3x3x16xf32>
// CHECK:         scf.forall (%[[N:.+]], %[[FB:.+]], %[[OH:.+]]) in (1, 1, 5) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<1x32x5x5xf32>)
// CHECK:           scf.for
// CHECK:             tensor.extract %[[X]]
// CHECK:             vector.broadcast {{.*}} : f32 to vector<16xf32>
// CHECK:             vector.fma {{.*}} : vector<16xf32>
// CHECK:           vector.shuffle {{.*}} : vector<16xf32>, vector<16xf32>
// CHECK:           vector.extract_strided_slice {{.*}} to vector<5xf32>
// CHECK:           arith.maximumf {{.*}} : vector<5xf32>
// CHECK:           vector.transfer_write {{.*}} : vector<5xf32>, tensor<1x32x1x5xf32>
// CHECK:           tensor.parallel_insert_slice
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK-NOT:     linalg.generic
func.func @stride_2_with_bias_and_relu(%x: tensor<1x16x11x11xf32>, %b: tensor<1x32x5x5xf32>) -> tensor<1x32x5x5xf32> {
  %w = arith.constant dense<0.5> : tensor<32x16x3x3xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x16x11x11xf32>, tensor<32x16x3x3xf32>) outs(%b : tensor<1x32x5x5xf32>) -> tensor<1x32x5x5xf32>
  %e = tensor.empty() : tensor<1x32x5x5xf32>
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o : tensor<1x32x5x5xf32>) outs(%e : tensor<1x32x5x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x32x5x5xf32>
  return %r : tensor<1x32x5x5xf32>
}

// -----

// 48 output channels (not a multiple of 32): one vector of 16 per tile,
// 3 channel blocks; a 14-wide row in one tile of 14 columns (the 32
// registers less 5 filter vectors and 2 for broadcasts: at most 25); a
// zero-filled init is not read back.
// CHECK-LABEL: func.func @stride_1_narrow_row_one_vector(
// CHECK:         scf.forall ({{.*}}) in (2, 3, 14)
// CHECK-NOT:       vector.transfer_read {{.*}} : tensor<1x48x1x14xf32>, vector<14xf32>
// CHECK:           vector.transfer_write {{.*}} : vector<14xf32>, tensor<1x16x1x14xf32>
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
func.func @stride_1_narrow_row_one_vector(%x: tensor<2x16x18x18xf32>) -> tensor<2x48x14x14xf32> {
  %w = arith.constant dense<0.25> : tensor<48x16x5x5xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x48x14x14xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x48x14x14xf32>) -> tensor<2x48x14x14xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<2x16x18x18xf32>, tensor<48x16x5x5xf32>) outs(%f : tensor<2x48x14x14xf32>) -> tensor<2x48x14x14xf32>
  return %o : tensor<2x48x14x14xf32>
}

// -----

// Does not fire: 24 output channels are not whole vectors of 16.
// CHECK-LABEL: func.func @partial_channel_vector_not_rewritten(
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     scf.forall
func.func @partial_channel_vector_not_rewritten(%x: tensor<1x16x11x11xf32>, %b: tensor<1x24x5x5xf32>) -> tensor<1x24x5x5xf32> {
  %w = arith.constant dense<0.5> : tensor<24x16x3x3xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x16x11x11xf32>, tensor<24x16x3x3xf32>) outs(%b : tensor<1x24x5x5xf32>) -> tensor<1x24x5x5xf32>
  return %o : tensor<1x24x5x5xf32>
}

// -----

// Does not fire: 32-wide unit-stride rows are whole vectors for the direct
// kernels (a 1x3 window, not Winograd's).
// CHECK-LABEL: func.func @whole_vector_rows_not_rewritten(
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     scf.forall
func.func @whole_vector_rows_not_rewritten(%x: tensor<1x16x4x34xf32>, %b: tensor<1x16x4x32xf32>) -> tensor<1x16x4x32xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x1x3xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x16x4x34xf32>, tensor<16x16x1x3xf32>) outs(%b : tensor<1x16x4x32xf32>) -> tensor<1x16x4x32xf32>
  return %o : tensor<1x16x4x32xf32>
}

// -----

// Does not fire: a 3x3 stride-1 convolution with 16 channels or more is
// lowerline-winograd-conv's (keep-winograd, the default).
// CHECK-LABEL: func.func @winograd_candidate_not_rewritten(
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     scf.forall
func.func @winograd_candidate_not_rewritten(%x: tensor<1x16x12x12xf32>, %b: tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) outs(%b : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  return %o : tensor<1x16x10x10xf32>
}

// -----

// Does not fire: the filter is an argument, not a constant to pack.
// CHECK-LABEL: func.func @filter_argument_not_rewritten(
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     scf.forall
func.func @filter_argument_not_rewritten(%x: tensor<1x16x11x11xf32>, %w: tensor<16x16x3x3xf32>, %b: tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32> {
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x16x11x11xf32>, tensor<16x16x3x3xf32>) outs(%b : tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  return %o : tensor<1x16x5x5xf32>
}

// -----

// Does not fire: 3 input channels (the ResNet stem) are below min-channels.
// CHECK-LABEL: func.func @few_input_channels_not_rewritten(
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     scf.forall
func.func @few_input_channels_not_rewritten(%x: tensor<1x3x37x37xf32>, %b: tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32> {
  %w = arith.constant dense<0.5> : tensor<64x3x7x7xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x3x37x37xf32>, tensor<64x3x7x7xf32>) outs(%b : tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  return %o : tensor<1x64x16x16xf32>
}

// -----

// Does not fire: a 1x1 window (no input element serves two taps).
// CHECK-LABEL: func.func @pointwise_not_rewritten(
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     scf.forall
func.func @pointwise_not_rewritten(%x: tensor<1x32x20x20xf32>, %b: tensor<1x64x10x10xf32>) -> tensor<1x64x10x10xf32> {
  %w = arith.constant dense<0.5> : tensor<64x32x1x1xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x32x20x20xf32>, tensor<64x32x1x1xf32>) outs(%b : tensor<1x64x10x10xf32>) -> tensor<1x64x10x10xf32>
  return %o : tensor<1x64x10x10xf32>
}

// -----

// A 3-channel 7x7 stride-2 convolution (the ResNet stem's), its ReLU and
// the 3x3 stride-2 max pool over its -inf padding in one kernel, threaded
// over (batch, channel block): each block's rows go to a channels-last
// buffer, the pool reads them there, and only the pooled rows are
// transposed (vector.shuffle) into NCHW. The bias is read as channel vectors.
// CHECK-LABEL: func.func @few_channels_fused_with_max_pool(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<1x3x27x27xf32>
// CHECK:         %[[WP:.+]] = arith.constant {{.*}} : tensor<2x3x7x7x16xf32>
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 1) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<1x32x6x6xf32>)
// CHECK:           tensor.empty() : tensor<11x11x32xf32>
// CHECK:           vector.fma {{.*}} : vector<16xf32>
// CHECK:           arith.maximumf {{.*}} : vector<16xf32>
// CHECK:           vector.transfer_write {{.*}} : vector<16xf32>, tensor<11x11x32xf32>
// CHECK:           vector.shuffle
// CHECK:           vector.transfer_write {{.*}} : vector<6xf32>, tensor<1x32x6x6xf32>
// CHECK:           tensor.parallel_insert_slice
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK-NOT:     linalg.pooling_nchw_max
func.func @few_channels_fused_with_max_pool(%x: tensor<1x3x27x27xf32>, %bias: tensor<32xf32>) -> tensor<1x32x6x6xf32> {
  %w = arith.constant dense<0.5> : tensor<32x3x7x7xf32>
  %e = tensor.empty() : tensor<1x32x11x11xf32>
  %b = linalg.broadcast ins(%bias : tensor<32xf32>) outs(%e : tensor<1x32x11x11xf32>) dimensions = [0, 2, 3]
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x3x27x27xf32>, tensor<32x3x7x7xf32>) outs(%b : tensor<1x32x11x11xf32>) -> tensor<1x32x11x11xf32>
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o : tensor<1x32x11x11xf32>) outs(%e : tensor<1x32x11x11xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x32x11x11xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<1x32x11x11xf32> to tensor<1x32x13x13xf32>
  %pe = tensor.empty() : tensor<1x32x6x6xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x32x6x6xf32>) -> tensor<1x32x6x6xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %win : tensor<1x32x13x13xf32>, tensor<3x3xf32>) outs(%pf : tensor<1x32x6x6xf32>) -> tensor<1x32x6x6xf32>
  return %pool : tensor<1x32x6x6xf32>
}

// -----

// Does not fire: the pool's padding is 0.0, not -inf (the zeros could win
// the max), and without a pool to fuse 3 input channels keep the row kernels.
// CHECK-LABEL: func.func @few_channels_zero_padded_pool_not_rewritten(
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK:         linalg.pooling_nchw_max
// CHECK-NOT:     scf.forall
func.func @few_channels_zero_padded_pool_not_rewritten(%x: tensor<1x3x27x27xf32>) -> tensor<1x32x6x6xf32> {
  %w = arith.constant dense<0.5> : tensor<32x3x7x7xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x11x11xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x32x11x11xf32>) -> tensor<1x32x11x11xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x3x27x27xf32>, tensor<32x3x7x7xf32>) outs(%f : tensor<1x32x11x11xf32>) -> tensor<1x32x11x11xf32>
  %p = tensor.pad %o low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x32x11x11xf32> to tensor<1x32x13x13xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %pe = tensor.empty() : tensor<1x32x6x6xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<1x32x6x6xf32>) -> tensor<1x32x6x6xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %win : tensor<1x32x13x13xf32>, tensor<3x3xf32>) outs(%pf : tensor<1x32x6x6xf32>) -> tensor<1x32x6x6xf32>
  return %pool : tensor<1x32x6x6xf32>
}
