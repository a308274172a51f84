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

// -----

// A dynamic dim that is not padded (a dynamic batch): the buffer, the fills
// and the interior carry its runtime size; the border fills and the copy
// are linalg ops tile-and-fuse tiles by rows of the batch.
// CHECK-LABEL: func.func @carries_a_dynamic_batch(
// CHECK-SAME:      %[[X:.+]]: tensor<?x3x6x6xf32>
// CHECK:         %[[N:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x3x6x6xf32>
// CHECK:         %[[B:.+]] = bufferization.alloc_tensor(%[[N]]) : tensor<?x3x8x8xf32>
// CHECK:         tensor.extract_slice %[[B]][0, 0, 0, 0] [%[[N]], 3, 1, 8] [1, 1, 1, 1] : tensor<?x3x8x8xf32> to tensor<?x3x1x8xf32>
// CHECK:         linalg.fill {{.+}} -> tensor<?x3x1x8xf32>
// CHECK:         tensor.extract_slice %{{.+}}[0, 0, 0, 7] [%[[N]], 3, 8, 1] [1, 1, 1, 1]
// CHECK:         %[[B4:.+]] = tensor.insert_slice
// CHECK:         %[[IN:.+]] = tensor.extract_slice %[[B4]][0, 0, 1, 1] [%[[N]], 3, 6, 6] [1, 1, 1, 1]
// CHECK:         %[[C:.+]] = linalg.copy {{.*}}ins(%[[X]] : tensor<?x3x6x6xf32>) outs(%[[IN]] : tensor<?x3x6x6xf32>)
// CHECK:         %[[P:.+]] = tensor.insert_slice %[[C]] into %[[B4]][0, 0, 1, 1] [%[[N]], 3, 6, 6] [1, 1, 1, 1]
// CHECK-NOT:     tensor.pad
// CHECK:         return %[[P]]
func.func @carries_a_dynamic_batch(%x: tensor<?x3x6x6xf32>) -> tensor<?x3x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<?x3x6x6xf32> to tensor<?x3x8x8xf32>
  return %p : tensor<?x3x8x8xf32>
}

// -----

// In place with a dynamic batch: the sizes are the producer's empty tensor's
// (its result does not exist yet where the fills go).
// CHECK-LABEL: func.func @in_place_with_a_dynamic_batch(
// CHECK:         %[[N:.+]] = tensor.dim
// CHECK:         %[[B:.+]] = bufferization.alloc_tensor(%[[N]]) : tensor<?x8x8xf32>
// CHECK:         %[[IN:.+]] = tensor.extract_slice %{{.+}}[0, 1, 1] [%[[N]], 6, 6] [1, 1, 1]
// CHECK:         %[[R:.+]] = linalg.generic {{.+}} outs(%[[IN]] : tensor<?x6x6xf32>)
// CHECK:         %[[P:.+]] = tensor.insert_slice %[[R]] into %{{.+}}[0, 1, 1] [%[[N]], 6, 6] [1, 1, 1]
// CHECK-NOT:     linalg.copy
// CHECK:         return %[[P]]
#id4 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @in_place_with_a_dynamic_batch(%x: tensor<?x6x6xf32>) -> tensor<?x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x6x6xf32>
  %e = tensor.empty(%n) : tensor<?x6x6xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<?x6x6xf32>) outs(%e : tensor<?x6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<?x6x6xf32>
  %p = tensor.pad %r low[0, 1, 1] high[0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zero : f32
  } : tensor<?x6x6xf32> to tensor<?x8x8xf32>
  return %p : tensor<?x8x8xf32>
}

// -----

// Not rewritten: a padded dynamic dim (its border's offset is not static).
// CHECK-LABEL: func.func @keeps_a_padded_dynamic_dim(
// CHECK:         tensor.pad
// CHECK-NOT:     linalg.fill
func.func @keeps_a_padded_dynamic_dim(%x: tensor<?x6xf32>) -> tensor<?x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<?x6xf32> to tensor<?x8xf32>
  return %p : tensor<?x8xf32>
}
