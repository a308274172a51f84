// RUN: lowerline-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(lowerline-fold-identity-extracts))" | FileCheck %s

// torch-mlir's broadcast of a dynamic dim once its size-1 check is folded:
// the generic reads its source at its own indices, and both have the size
// %s: the copy is its source.
// CHECK-LABEL: func.func @copy_of_same_size(
// CHECK-SAME:      %[[S:[a-z0-9]+]]: index
// CHECK:         %[[SRC:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<2x?x16xf32>)
// CHECK-NOT:     tensor.extract
// CHECK:         return %[[SRC]]
func.func @copy_of_same_size(%x: tensor<2x?x16xf32>, %s: index) -> tensor<2x?x16xf32> {
  %e = tensor.empty(%s) : tensor<2x?x16xf32>
  %src = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x?x16xf32>) outs(%e : tensor<2x?x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.negf %in : f32
    linalg.yield %m : f32
  } -> tensor<2x?x16xf32>
  %e2 = tensor.empty(%s) : tensor<2x?x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e2 : tensor<2x?x16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %v = tensor.extract %src[%i0, %i1, %i2] : tensor<2x?x16xf32>
    linalg.yield %v : f32
  } -> tensor<2x?x16xf32>
  return %r : tensor<2x?x16xf32>
}

// -----

// Kept: sizes that are not known to agree (%s against %t), the indices
// swapped (a transpose), an index still computed (a real broadcast), and a
// source that is a function argument (its size is not traced).
// CHECK-LABEL: func.func @copies_kept(
// CHECK-COUNT-4: tensor.extract
func.func @copies_kept(%x: tensor<?x?xf32>, %s: index, %t: index) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty(%s, %s) : tensor<?x?xf32>
  %src = linalg.copy ins(%x : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %f = tensor.empty(%s, %t) : tensor<?x?xf32>
  %other = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%f : tensor<?x?xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %v = tensor.extract %src[%i0, %i1] : tensor<?x?xf32>
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %swapped = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %v = tensor.extract %src[%i1, %i0] : tensor<?x?xf32>
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %broadcast = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %one = arith.cmpi eq, %s, %c1 : index
    %j = arith.select %one, %c0, %i1 : index
    %v = tensor.extract %src[%i0, %j] : tensor<?x?xf32>
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %argument = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %v = tensor.extract %x[%i0, %i1] : tensor<?x?xf32>
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %other, %swapped, %broadcast, %argument : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
