// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-decompose-transposed-conv))" \
// RUN:   --split-input-file | FileCheck %s

// ConvTranspose2d(k=3, stride=2, padding=1, output_padding=1) as torch-mlir
// lowers it: four sub-convolutions on the un-dilated input, one per output
// phase (rows, columns) = (0, 0), (0, 1), (1, 0), (1, 1), with 1x1, 1x2, 2x1
// and 2x2 taps of the kernel taken every second tap; each accumulates into
// its stride-2 view of the destination. Phases reading past the input's end
// pad it with zeros on that side.
// CHECK-LABEL: func.func @stride2_kernel3_padding1(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x5x7xf32>, %[[W:[^:]+]]: tensor<4x8x3x3xf32>, %[[B:[^:]+]]: tensor<2x4x10x14xf32>
// CHECK-NOT:     linalg.conv_2d_nchw_fchw {{.*}}tensor<2x8x12x16xf32>
// CHECK:         %[[W0:.+]] = tensor.extract_slice %[[W]][0, 0, 1, 1] [4, 8, 1, 1] [1, 1, 2, 2]
// CHECK:         %[[V0:.+]] = tensor.extract_slice %[[B]][0, 0, 0, 0] [2, 4, 5, 7] [1, 1, 2, 2]
// CHECK:         %[[C0:.+]] = linalg.conv_2d_nchw_fchw {{.*}} ins(%[[X]], %[[W0]] : tensor<2x8x5x7xf32>, tensor<4x8x1x1xf32>) outs(%[[V0]] :
// CHECK:         %[[A0:.+]] = tensor.insert_slice %[[C0]] into %[[B]][0, 0, 0, 0] [2, 4, 5, 7] [1, 1, 2, 2]
// CHECK:         tensor.extract_slice %[[W]][0, 0, 1, 0] [4, 8, 1, 2] [1, 1, 2, 2]
// CHECK:         tensor.extract_slice %[[A0]][0, 0, 0, 1] [2, 4, 5, 7] [1, 1, 2, 2]
// CHECK:         tensor.pad %[[X]] low[0, 0, 0, 0] high[0, 0, 0, 1]
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} tensor<2x8x5x8xf32>, tensor<4x8x1x2xf32>
// CHECK:         tensor.pad %[[X]] low[0, 0, 0, 0] high[0, 0, 1, 0]
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} tensor<2x8x6x7xf32>, tensor<4x8x2x1xf32>
// CHECK:         tensor.extract_slice %[[W]][0, 0, 0, 0] [4, 8, 2, 2] [1, 1, 2, 2]
// CHECK:         tensor.pad %[[X]] low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK:         %[[C3:.+]] = linalg.conv_2d_nchw_fchw {{.*}} tensor<2x8x6x8xf32>, tensor<4x8x2x2xf32>
// CHECK:         %[[A3:.+]] = tensor.insert_slice %[[C3]] into %{{.+}}[0, 0, 1, 1] [2, 4, 5, 7] [1, 1, 2, 2]
// CHECK:         return %[[A3]]
func.func @stride2_kernel3_padding1(%x: tensor<2x8x5x7xf32>, %w: tensor<4x8x3x3xf32>, %b: tensor<2x4x10x14xf32>) -> tensor<2x4x10x14xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x12x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x12x16xf32>) -> tensor<2x8x12x16xf32>
  %d = tensor.insert_slice %x into %z[0, 0, 1, 1] [2, 8, 5, 7] [1, 1, 2, 2] : tensor<2x8x5x7xf32> into tensor<2x8x12x16xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%d, %w : tensor<2x8x12x16xf32>, tensor<4x8x3x3xf32>) outs(%b : tensor<2x4x10x14xf32>) -> tensor<2x4x10x14xf32>
  return %o : tensor<2x4x10x14xf32>
}

// -----

// ConvTranspose1d(k=2, stride=3, padding=0): a kernel shorter than the
// stride leaves every third output position to the destination (its bias);
// the other two phases read one tap each, with no padding.
// CHECK-LABEL: func.func @stride3_kernel2_1d(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<1x3x5xf32>, %[[W:[^:]+]]: tensor<2x3x2xf32>, %[[B:[^:]+]]: tensor<1x2x14xf32>
// CHECK:         tensor.extract_slice %[[W]][0, 0, 1] [2, 3, 1] [1, 1, 3]
// CHECK:         %[[V0:.+]] = tensor.extract_slice %[[B]][0, 0, 0] [1, 2, 5] [1, 1, 3]
// CHECK:         linalg.conv_1d_ncw_fcw {{.*}} ins(%[[X]], {{.*}}) outs(%[[V0]] :
// CHECK:         tensor.extract_slice %[[W]][0, 0, 0] [2, 3, 1] [1, 1, 3]
// CHECK:         tensor.extract_slice %{{.+}}[0, 0, 1] [1, 2, 5] [1, 1, 3]
// CHECK:         linalg.conv_1d_ncw_fcw {{.*}} ins(%[[X]],
// CHECK-NOT:     linalg.conv_1d_ncw_fcw
// CHECK-NOT:     tensor.pad
// CHECK:         return
func.func @stride3_kernel2_1d(%x: tensor<1x3x5xf32>, %w: tensor<2x3x2xf32>, %b: tensor<1x2x14xf32>) -> tensor<1x2x14xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x3x15xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x3x15xf32>) -> tensor<1x3x15xf32>
  %d = tensor.insert_slice %x into %z[0, 0, 1] [1, 3, 5] [1, 1, 3] : tensor<1x3x5xf32> into tensor<1x3x15xf32>
  %o = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>} ins(%d, %w : tensor<1x3x15xf32>, tensor<2x3x2xf32>) outs(%b : tensor<1x2x14xf32>) -> tensor<1x2x14xf32>
  return %o : tensor<1x2x14xf32>
}

// -----

// An input dilated into a fill of 1.0 is not a transposed convolution: left alone.
// CHECK-LABEL: func.func @nonzero_fill_not_decomposed(
// CHECK:         tensor.insert_slice
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} tensor<1x2x9x9xf32>
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
func.func @nonzero_fill_not_decomposed(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x2x9x9xf32>
  %z = linalg.fill ins(%one : f32) outs(%e : tensor<1x2x9x9xf32>) -> tensor<1x2x9x9xf32>
  %d = tensor.insert_slice %x into %z[0, 0, 1, 1] [1, 2, 4, 4] [1, 1, 2, 2] : tensor<1x2x4x4xf32> into tensor<1x2x9x9xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%d, %w : tensor<1x2x9x9xf32>, tensor<3x2x3x3xf32>) outs(%b : tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  return %o : tensor<1x3x7x7xf32>
}

// -----

// A padded (not dilated) input: a plain convolution, left alone.
// CHECK-LABEL: func.func @padded_input_not_decomposed(
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} tensor<1x2x6x6xf32>
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
func.func @padded_input_not_decomposed(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x6x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %d = tensor.insert_slice %x into %z[0, 0, 1, 1] [1, 2, 4, 4] [1, 1, 1, 1] : tensor<1x2x4x4xf32> into tensor<1x2x6x6xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%d, %w : tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) outs(%b : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %o : tensor<1x3x4x4xf32>
}

// -----

// A strided convolution of a dilated input: left alone.
// CHECK-LABEL: func.func @strided_conv_not_decomposed(
// CHECK:         linalg.conv_2d_nchw_fchw {{.*}} tensor<1x2x9x9xf32>
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
func.func @strided_conv_not_decomposed(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x9x9xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x9x9xf32>) -> tensor<1x2x9x9xf32>
  %d = tensor.insert_slice %x into %z[0, 0, 1, 1] [1, 2, 4, 4] [1, 1, 2, 2] : tensor<1x2x4x4xf32> into tensor<1x2x9x9xf32>
  %o = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%d, %w : tensor<1x2x9x9xf32>, tensor<3x2x3x3xf32>) outs(%b : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %o : tensor<1x3x4x4xf32>
}
