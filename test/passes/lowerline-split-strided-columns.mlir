// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-split-strided-columns))" \
// RUN:   --split-input-file | FileCheck %s

// A 3x3 stride-2 convolution over a padded 20 x 20 input (ResNet's
// downsample): the even output columns' taps 0 and 2 read the input's odd
// columns (a zero column first), tap 1 its even ones; each phase is a
// convolution with a row stride only, over a contiguous copy (a pad of the
// strided slice), accumulated into the bias and then the first phase.
// CHECK-LABEL: func.func @splits_3x3_stride_2(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<1x8x20x20xf32>, %[[W:[^:]+]]: tensor<16x8x3x3xf32>, %[[B:[^:]+]]: tensor<1x16x10x10xf32>
// CHECK:         %[[X0:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 1] [1, 8, 20, 10] [1, 1, 1, 2]
// CHECK:         %[[P0:.+]] = tensor.pad %[[X0]] low[0, 0, 1, 1] high[0, 0, 1, 0]
// CHECK:         %[[W0:.+]] = tensor.extract_slice %[[W]][0, 0, 0, 0] [16, 8, 3, 2] [1, 1, 1, 2]
// CHECK:         %[[C0:.+]] = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>} ins(%[[P0]], %[[W0]] : tensor<1x8x22x11xf32>, tensor<16x8x3x2xf32>) outs(%[[B]] :
// CHECK:         %[[X1:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 8, 20, 10] [1, 1, 1, 2]
// CHECK:         %[[P1:.+]] = tensor.pad %[[X1]] low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK:         %[[W1:.+]] = tensor.extract_slice %[[W]][0, 0, 0, 1] [16, 8, 3, 1] [1, 1, 1, 2]
// CHECK:         %[[C1:.+]] = linalg.conv_2d_nchw_fchw {{.*}}strides = dense<[2, 1]> {{.*}}ins(%[[P1]], %[[W1]] : tensor<1x8x22x10xf32>, tensor<16x8x3x1xf32>) outs(%[[C0]] :
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         return %[[C1]]
func.func @splits_3x3_stride_2(%x: tensor<1x8x20x20xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x20x20xf32> to tensor<1x8x22x22xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%p, %w : tensor<1x8x22x22xf32>, tensor<16x8x3x3xf32>) outs(%b : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  return %o : tensor<1x16x10x10xf32>
}

// -----

// A 3x3 stride-2 convolution without padding over a dynamic batch: each
// phase is a plain copy of its columns (the convolution would otherwise read
// the strided slice itself), sized with the batch at run time.
// CHECK-LABEL: func.func @splits_unpadded_dynamic_batch(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<?x4x9x9xf32>, %[[W:[^:]+]]: tensor<6x4x3x3xf32>, %[[B:[^:]+]]: tensor<?x6x4x4xf32>
// CHECK:         %[[N:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x4x9x9xf32>
// CHECK:         %[[X0:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [%[[N]], 4, 9, 5] [1, 1, 1, 2]
// CHECK:         %[[E:.+]] = tensor.empty(%[[N]]) : tensor<?x4x9x5xf32>
// CHECK:         %[[COPY:.+]] = linalg.copy {{.*}}ins(%[[X0]] : tensor<?x4x9x5xf32>) outs(%[[E]] :
// CHECK:         %[[C0:.+]] = linalg.conv_2d_nchw_fchw {{.*}}strides = dense<[2, 1]> {{.*}}ins(%[[COPY]], %{{.+}} : tensor<?x4x9x5xf32>, tensor<6x4x3x2xf32>) outs(%[[B]] :
// CHECK:         tensor.extract_slice %[[X]][0, 0, 0, 1] [%{{.+}}, 4, 9, 4] [1, 1, 1, 2]
// CHECK:         linalg.copy
// CHECK:         %[[C1:.+]] = linalg.conv_2d_nchw_fchw {{.*}}tensor<?x4x9x4xf32>, tensor<6x4x3x1xf32>) outs(%[[C0]] :
// CHECK:         return %[[C1]]
func.func @splits_unpadded_dynamic_batch(%x: tensor<?x4x9x9xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<?x6x4x4xf32>) -> tensor<?x6x4x4xf32> {
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<?x4x9x9xf32>, tensor<6x4x3x3xf32>) outs(%b : tensor<?x6x4x4xf32>) -> tensor<?x6x4x4xf32>
  return %o : tensor<?x6x4x4xf32>
}

// -----

// A 5-wide kernel at stride 3 with padding 2 over 11 columns: phases of 2, 2
// and 1 taps; the last phase's first column and the first phase's last
// read padding only at the edges.
// CHECK-LABEL: func.func @splits_kernel_5_stride_3(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x3x7x11xf32>, %[[W:[^:]+]]: tensor<4x3x5x5xf32>
// CHECK:         tensor.extract_slice %[[X]][0, 0, 0, 1] [2, 3, 7, 4] [1, 1, 1, 3]
// CHECK:         tensor.pad %{{.+}} low[0, 0, 2, 1] high[0, 0, 2, 0]
// CHECK:         tensor.extract_slice %[[W]][0, 0, 0, 0] [4, 3, 5, 2] [1, 1, 1, 3]
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}}strides = dense<[3, 1]> {{.*}}: tensor<2x3x11x5xf32>, tensor<4x3x5x2xf32>)
// CHECK:         tensor.extract_slice %[[X]][0, 0, 0, 2] [2, 3, 7, 3] [1, 1, 1, 3]
// CHECK:         tensor.pad %{{.+}} low[0, 0, 2, 1] high[0, 0, 2, 1]
// CHECK:         tensor.extract_slice %[[W]][0, 0, 0, 1] [4, 3, 5, 2] [1, 1, 1, 3]
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}}: tensor<2x3x11x5xf32>, tensor<4x3x5x2xf32>)
// CHECK:         tensor.extract_slice %[[X]][0, 0, 0, 0] [2, 3, 7, 4] [1, 1, 1, 3]
// CHECK:         tensor.pad %{{.+}} low[0, 0, 2, 0] high[0, 0, 2, 0]
// CHECK:         tensor.extract_slice %[[W]][0, 0, 0, 2] [4, 3, 5, 1] [1, 1, 1, 3]
// CHECK:         %[[C:.+]] = linalg.conv_2d_nchw_fchw {{.*}}: tensor<2x3x11x4xf32>, tensor<4x3x5x1xf32>)
// CHECK:         return %[[C]]
func.func @splits_kernel_5_stride_3(%x: tensor<2x3x7x11xf32>, %w: tensor<4x3x5x5xf32>, %b: tensor<2x4x3x4xf32>) -> tensor<2x4x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 2, 2] high[0, 0, 2, 2] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x7x11xf32> to tensor<2x3x11x15xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<3> : vector<2xi64>} ins(%p, %w : tensor<2x3x11x15xf32>, tensor<4x3x5x5xf32>) outs(%b : tensor<2x4x3x4xf32>) -> tensor<2x4x3x4xf32>
  return %o : tensor<2x4x3x4xf32>
}

// -----

// A constant kernel's taps of a phase are a constant of their own,
// computed at compile time (no slice of the kernel left at run time).
// CHECK-LABEL: func.func @constant_kernel_taps(
// CHECK-NOT:     tensor.extract_slice %{{.+}}[0, 0, 0, 0] [2, 1, 3, 2]
// CHECK:         %[[W0:.+]] = arith.constant dense_resource<{{.+}}.s2q0> : tensor<2x1x3x2xf32>
// CHECK:         %[[C0:.+]] = linalg.conv_2d_nchw_fchw {{.*}}ins(%{{.+}}, %[[W0]] :
// CHECK:         %[[W1:.+]] = arith.constant dense_resource<{{.+}}.s2q1> : tensor<2x1x3x1xf32>
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}}ins(%{{.+}}, %[[W1]] : {{.*}}outs(%[[C0]] :
func.func @constant_kernel_taps(%x: tensor<1x1x9x9xf32>, %b: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = arith.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0], [-7.0, -8.0, -9.0]]]]> : tensor<2x1x3x3xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<1x1x9x9xf32>, tensor<2x1x3x3xf32>) outs(%b : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %o : tensor<1x2x4x4xf32>
}

// -----

// Left alone: a stride along the rows only (the row read is contiguous
// already), a dilation along the row, an integer convolution, windows that
// do not overlap along the row (1x1 stride 2: no column serves two taps).
// CHECK-LABEL: func.func @leaves_row_stride_column_dilation_integer(
// CHECK-NOT:     tensor.extract_slice
// CHECK:         linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<[2, 1]> : vector<2xi64>}
// CHECK:         linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
// CHECK:         linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} {{.*}}tensor<1x8x20x20xi8>
// CHECK:         linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} {{.*}}tensor<16x8x1x1xf32>
// CHECK-NOT:     tensor.extract_slice
// CHECK:         return
func.func @leaves_row_stride_column_dilation_integer(%x: tensor<1x8x20x20xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<1x16x9x18xf32>, %c: tensor<1x16x16x16xf32>, %xi: tensor<1x8x20x20xi8>, %wi: tensor<16x8x3x3xi8>, %bi: tensor<1x16x9x9xi32>, %w1: tensor<16x8x1x1xf32>, %b1: tensor<1x16x10x10xf32>) -> (tensor<1x16x9x18xf32>, tensor<1x16x16x16xf32>, tensor<1x16x9x9xi32>, tensor<1x16x10x10xf32>) {
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<[2, 1]> : vector<2xi64>} ins(%x, %w : tensor<1x8x20x20xf32>, tensor<16x8x3x3xf32>) outs(%b : tensor<1x16x9x18xf32>) -> tensor<1x16x9x18xf32>
  %d = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x8x20x20xf32>, tensor<16x8x3x3xf32>) outs(%c : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %i = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%xi, %wi : tensor<1x8x20x20xi8>, tensor<16x8x3x3xi8>) outs(%bi : tensor<1x16x9x9xi32>) -> tensor<1x16x9x9xi32>
  %p = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w1 : tensor<1x8x20x20xf32>, tensor<16x8x1x1xf32>) outs(%b1 : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  return %o, %d, %i, %p : tensor<1x16x9x18xf32>, tensor<1x16x16x16xf32>, tensor<1x16x9x9xi32>, tensor<1x16x10x10xf32>
}
