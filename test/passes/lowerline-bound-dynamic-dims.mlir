// RUN: lowerline-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(lowerline-bound-dynamic-dims))" | FileCheck %s
// RUN: lowerline-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(lowerline-bound-dynamic-dims,int-range-optimizations,canonicalize))" \
// RUN:   | FileCheck %s --check-prefix=FOLD

// A dynamic sequence length declared in [2, 128] (argument 0, dim 1): its
// size is clamped to the range, every use reads the clamp; the integer range
// analysis then folds torch-mlir's broadcast check (seq == 1) and its
// inferred-size check (seq < 0), so the copy reads its own indices.
// CHECK-LABEL: func.func @head_split_copy(
// CHECK:         %[[S:.+]] = tensor.dim %arg0, %c1 : tensor<2x?x16xf32>
// CHECK:         %[[LO:.+]] = arith.minsi %[[S]], %c128{{.*}} : index
// CHECK:         %[[B:.+]] = arith.maxsi %[[LO]], %c2{{.*}} : index
// CHECK:         tensor.empty(%[[B]])
// CHECK:         arith.cmpi eq, %[[B]], %c1
// FOLD-LABEL:  func.func @head_split_copy(
// FOLD-NOT:      arith.cmpi
// FOLD-NOT:      arith.select
// FOLD:          %[[I:.+]] = linalg.index 1
// FOLD:          tensor.extract %{{.+}}[%{{.+}}, %[[I]], %{{.+}}]
// FOLD:        return %{{.+}}, %false
func.func @head_split_copy(%x: tensor<2x?x16xf32>) -> (tensor<2x?x16xf32>, i1) attributes {lowerline.dynamic_ranges = array<i64: 0, 1, 2, 128>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  %s = tensor.dim %x, %c1 : tensor<2x?x16xf32>
  %e = tensor.empty(%s) : tensor<2x?x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<2x?x16xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %one = arith.cmpi eq, %s, %c1 : index
    %j = arith.select %one, %c0, %i1 : index
    %v = tensor.extract %x[%i0, %j, %i2] : tensor<2x?x16xf32>
    linalg.yield %v : f32
  } -> tensor<2x?x16xf32>
  %n = arith.index_cast %s : index to i64
  %negative = arith.cmpi slt, %n, %zero : i64
  return %r, %negative : tensor<2x?x16xf32>, i1
}

// -----

// A range that holds 1 keeps the broadcast check (size 1 is possible); a dim
// without a declared range (dim 0 here) and a function without ranges are
// left alone.
// CHECK-LABEL: func.func @range_from_1(
// CHECK:         %[[S:.+]] = tensor.dim %arg0, %c1
// CHECK:         %[[B:.+]] = arith.maxsi %{{.+}}, %c1{{.*}} : index
// CHECK:         %[[R:.+]] = tensor.dim %arg0, %c0
// CHECK-NOT:     arith.minsi
// CHECK:         return %[[B]], %[[R]]
// FOLD-LABEL:  func.func @range_from_1(
// FOLD:          arith.cmpi eq
func.func @range_from_1(%x: tensor<?x?xf32>) -> (index, index, i1) attributes {lowerline.dynamic_ranges = array<i64: 0, 1, 1, 64>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = tensor.dim %x, %c1 : tensor<?x?xf32>
  %r = tensor.dim %x, %c0 : tensor<?x?xf32>
  %one = arith.cmpi eq, %s, %c1 : index
  return %s, %r, %one : index, index, i1
}

// CHECK-LABEL: func.func @no_ranges(
// CHECK-NOT:     arith.minsi
// CHECK-NOT:     arith.maxsi
func.func @no_ranges(%x: tensor<?xf32>) -> index {
  %c0 = arith.constant 0 : index
  %s = tensor.dim %x, %c0 : tensor<?xf32>
  return %s : index
}
