// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=cpu:znver4})" \
// RUN:   --split-input-file | FileCheck %s

// A pad nothing reads, as lowerline-decompose-pad leaves it (fills and a copy
// into slices of a buffer; a rewrite replaced its reader), beside a strided
// convolution at batch 8: the dead chain is erased before planning. Planned,
// the copy got a group of its own whose root the convolution's script had
// already erased (an internal error: its indexing maps were read from an
// erased op).
// CHECK-LABEL: func.func @erases_a_dead_padded_copy(
// CHECK-NOT:     bufferization.alloc_tensor
// CHECK-NOT:     linalg.fill
// CHECK-NOT:     linalg.copy
// CHECK:         %[[C:.+]] = scf.forall
// CHECK-NOT:     linalg.copy
// CHECK:         return %[[C]]
func.func @erases_a_dead_padded_copy(%x: tensor<8x7x20x17xf32>, %w: tensor<31x7x3x1xf32>, %b: tensor<8x31x10x9xf32>, %y: tensor<8x7x22x9xf32>) -> tensor<8x31x10x9xf32> {
  %zero = arith.constant 0.0 : f32
  %buf = bufferization.alloc_tensor() : tensor<8x7x22x19xf32>
  %top = tensor.extract_slice %buf[0, 0, 0, 0] [8, 7, 1, 19] [1, 1, 1, 1] : tensor<8x7x22x19xf32> to tensor<8x7x1x19xf32>
  %ftop = linalg.fill ins(%zero : f32) outs(%top : tensor<8x7x1x19xf32>) -> tensor<8x7x1x19xf32>
  %b1 = tensor.insert_slice %ftop into %buf[0, 0, 0, 0] [8, 7, 1, 19] [1, 1, 1, 1] : tensor<8x7x1x19xf32> into tensor<8x7x22x19xf32>
  %in = tensor.extract_slice %b1[0, 0, 1, 1] [8, 7, 20, 17] [1, 1, 1, 1] : tensor<8x7x22x19xf32> to tensor<8x7x20x17xf32>
  %copy = linalg.copy ins(%x : tensor<8x7x20x17xf32>) outs(%in : tensor<8x7x20x17xf32>) -> tensor<8x7x20x17xf32>
  %dead = tensor.insert_slice %copy into %b1[0, 0, 1, 1] [8, 7, 20, 17] [1, 1, 1, 1] : tensor<8x7x20x17xf32> into tensor<8x7x22x19xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>} ins(%y, %w : tensor<8x7x22x9xf32>, tensor<31x7x3x1xf32>) outs(%b : tensor<8x31x10x9xf32>) -> tensor<8x31x10x9xf32>
  return %c : tensor<8x31x10x9xf32>
}

// -----

// The same padded copy, returned: it is live, so the fill and the copy are
// planned and tiled into vector rows like any others.
// CHECK-LABEL: func.func @keeps_a_live_padded_copy(
// CHECK:         scf.for
// CHECK:           linalg.fill {lowerline.vector_sizes = array<i64: 1, 1, 1, 19>}
// CHECK:         scf.for
// CHECK:           linalg.copy {lowerline.vector_sizes = array<i64: 1, 1, 1, 17>}
// CHECK:         %[[P:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 1, 1] [8, 7, 20, 17] [1, 1, 1, 1]
// CHECK:         return %[[P]]
func.func @keeps_a_live_padded_copy(%x: tensor<8x7x20x17xf32>) -> tensor<8x7x22x19xf32> {
  %zero = arith.constant 0.0 : f32
  %buf = bufferization.alloc_tensor() : tensor<8x7x22x19xf32>
  %top = tensor.extract_slice %buf[0, 0, 0, 0] [8, 7, 1, 19] [1, 1, 1, 1] : tensor<8x7x22x19xf32> to tensor<8x7x1x19xf32>
  %ftop = linalg.fill ins(%zero : f32) outs(%top : tensor<8x7x1x19xf32>) -> tensor<8x7x1x19xf32>
  %b1 = tensor.insert_slice %ftop into %buf[0, 0, 0, 0] [8, 7, 1, 19] [1, 1, 1, 1] : tensor<8x7x1x19xf32> into tensor<8x7x22x19xf32>
  %in = tensor.extract_slice %b1[0, 0, 1, 1] [8, 7, 20, 17] [1, 1, 1, 1] : tensor<8x7x22x19xf32> to tensor<8x7x20x17xf32>
  %copy = linalg.copy ins(%x : tensor<8x7x20x17xf32>) outs(%in : tensor<8x7x20x17xf32>) -> tensor<8x7x20x17xf32>
  %live = tensor.insert_slice %copy into %b1[0, 0, 1, 1] [8, 7, 20, 17] [1, 1, 1, 1] : tensor<8x7x20x17xf32> into tensor<8x7x22x19xf32>
  return %live : tensor<8x7x22x19xf32>
}
