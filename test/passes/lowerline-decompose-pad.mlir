// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-decompose-pad))" \
// RUN:   --split-input-file | FileCheck %s

// The pad of a linalg op's result (a ReLU feeding the next convolution): the
// padded buffer's border is filled first, one fill per side of each padded
// dim, and the op writes its result straight into the interior; no copy.
// CHECK-LABEL: func.func @writes_the_producer_in_place(
// CHECK:         %[[B:.+]] = bufferization.alloc_tensor() : tensor<4x8x8xf32>
// CHECK:         %[[TOP:.+]] = tensor.extract_slice %[[B]][0, 0, 0] [4, 1, 8] [1, 1, 1]
// CHECK:         %[[FTOP:.+]] = linalg.fill ins(%[[ZERO:.+]] : f32) outs(%[[TOP]] : tensor<4x1x8xf32>)
// CHECK:         %[[B1:.+]] = tensor.insert_slice %[[FTOP]] into %[[B]][0, 0, 0] [4, 1, 8] [1, 1, 1]
// CHECK:         tensor.extract_slice %[[B1]][0, 7, 0] [4, 1, 8] [1, 1, 1]
// CHECK:         tensor.extract_slice %{{.+}}[0, 0, 0] [4, 8, 1] [1, 1, 1]
// CHECK:         %[[B4:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 7] [4, 8, 1] [1, 1, 1]
// CHECK:         %[[IN:.+]] = tensor.extract_slice %[[B4]][0, 1, 1] [4, 6, 6] [1, 1, 1]
// CHECK:         %[[R:.+]] = linalg.generic {{.+}} outs(%[[IN]] : tensor<4x6x6xf32>)
// CHECK:         %[[P:.+]] = tensor.insert_slice %[[R]] into %[[B4]][0, 1, 1] [4, 6, 6] [1, 1, 1]
// CHECK-NOT:     linalg.copy
// CHECK-NOT:     tensor.pad
// CHECK:         return %[[P]]
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @writes_the_producer_in_place(%x: tensor<4x6x6xf32>) -> tensor<4x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6x6xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<4x6x6xf32>) outs(%e : tensor<4x6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x6x6xf32>
  %p = tensor.pad %r low[0, 1, 1] high[0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<4x6x6xf32> to tensor<4x8x8xf32>
  return %p : tensor<4x8x8xf32>
}

// -----

// The pad of a function argument: the interior is written by a linalg.copy
// (tile-and-fuse parallelizes and vectorizes it; a tensor.insert_slice would
// bufferize to one serial strided copy). Only the padded dims get fills.
// CHECK-LABEL: func.func @copies_an_argument(
// CHECK-SAME:      %[[X:.+]]: tensor<2x6x6xf32>
// CHECK:         %[[B:.+]] = bufferization.alloc_tensor() : tensor<2x6x9xf32>
// CHECK:         tensor.extract_slice %[[B]][0, 0, 0] [2, 6, 2] [1, 1, 1]
// CHECK:         linalg.fill
// CHECK:         %[[B1:.+]] = tensor.insert_slice
// CHECK:         tensor.extract_slice %[[B1]][0, 0, 8] [2, 6, 1] [1, 1, 1]
// CHECK:         linalg.fill
// CHECK:         %[[B2:.+]] = tensor.insert_slice
// CHECK-NOT:     linalg.fill
// CHECK:         %[[IN:.+]] = tensor.extract_slice %[[B2]][0, 0, 2] [2, 6, 6] [1, 1, 1]
// CHECK:         %[[C:.+]] = linalg.copy {{.*}}ins(%[[X]] : tensor<2x6x6xf32>) outs(%[[IN]] : tensor<2x6x6xf32>)
// CHECK:         %[[P:.+]] = tensor.insert_slice %[[C]] into %[[B2]][0, 0, 2] [2, 6, 6] [1, 1, 1]
// CHECK:         return %[[P]]
func.func @copies_an_argument(%x: tensor<2x6x6xf32>) -> tensor<2x6x9xf32> {
  %one = arith.constant 1.0 : f32
  %p = tensor.pad %x low[0, 0, 2] high[0, 0, 1] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %one : f32
  } : tensor<2x6x6xf32> to tensor<2x6x9xf32>
  return %p : tensor<2x6x9xf32>
}

// -----

// A producer whose result has another user must keep its own buffer: the
// pad copies.
// CHECK-LABEL: func.func @copies_a_result_with_two_users(
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK:         linalg.copy {{.*}}ins(%[[R]]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @copies_a_result_with_two_users(%x: tensor<6x6xf32>) -> (tensor<6x6xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x6xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<6x6xf32>) outs(%e : tensor<6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<6x6xf32>
  %p = tensor.pad %r low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<6x6xf32> to tensor<8x8xf32>
  return %r, %p : tensor<6x6xf32>, tensor<8x8xf32>
}

// -----

// Not rewritten: dynamic padding, and a padding value computed from the
// region's indices.
// CHECK-LABEL: func.func @keeps_dynamic_pads(
// CHECK:         tensor.pad
// CHECK-LABEL: func.func @keeps_computed_padding_values(
// CHECK:         tensor.pad
// CHECK-NOT:     linalg.fill
func.func @keeps_dynamic_pads(%x: tensor<6x6xf32>, %n: index) -> tensor<?x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[%n, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<6x6xf32> to tensor<?x8xf32>
  return %p : tensor<?x8xf32>
}
func.func @keeps_computed_padding_values(%x: tensor<6x6xf32>) -> tensor<8x8xf32> {
  %p = tensor.pad %x low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    %v = arith.index_cast %i : index to i32
    %f = arith.sitofp %v : i32 to f32
    tensor.yield %f : f32
  } : tensor<6x6xf32> to tensor<8x8xf32>
  return %p : tensor<8x8xf32>
}
