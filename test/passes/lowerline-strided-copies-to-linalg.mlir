// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-strided-copies-to-linalg))" \
// RUN:   --split-input-file | FileCheck %s

// A copy into a padded buffer's interior (a strided view) becomes linalg.copy.
// CHECK-LABEL: func.func @copies_into_a_padded_interior(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4x6x6xf32>
// CHECK:         %[[VIEW:.+]] = memref.subview
// CHECK-NEXT:    linalg.copy {{.*}}ins(%[[X]] : memref<4x6x6xf32>) outs(%[[VIEW]] : memref<4x6x6xf32, strided<[64, 8, 1], offset: 9>>)
// CHECK-NOT:     memref.copy
// CHECK:         return
func.func @copies_into_a_padded_interior(%x: memref<4x6x6xf32>, %padded: memref<4x8x8xf32>) {
  %view = memref.subview %padded[0, 1, 1] [4, 6, 6] [1, 1, 1] : memref<4x8x8xf32> to memref<4x6x6xf32, strided<[64, 8, 1], offset: 9>>
  memref.copy %x, %view : memref<4x6x6xf32> to memref<4x6x6xf32, strided<[64, 8, 1], offset: 9>>
  return
}

// -----

// Reading from a strided view counts as well.
// CHECK-LABEL: func.func @copies_out_of_a_strided_view(
// CHECK:         linalg.copy {{.*}}ins(%{{.+}} : memref<2x3xf32, strided<[8, 1], offset: 1>>) outs(%{{.+}} : memref<2x3xf32>)
// CHECK-NOT:     memref.copy
func.func @copies_out_of_a_strided_view(%big: memref<2x8xf32>, %out: memref<2x3xf32>) {
  %view = memref.subview %big[0, 1] [2, 3] [1, 1] : memref<2x8xf32> to memref<2x3xf32, strided<[8, 1], offset: 1>>
  memref.copy %view, %out : memref<2x3xf32, strided<[8, 1], offset: 1>> to memref<2x3xf32>
  return
}

// -----

// Contiguous buffers keep memref.copy (one memcpy): the pass does not fire.
// CHECK-LABEL: func.func @keeps_contiguous_copies(
// CHECK-NEXT:    memref.copy %{{.+}}, %{{.+}} : memref<16x16xf32> to memref<16x16xf32>
// CHECK-NOT:     linalg.copy
func.func @keeps_contiguous_copies(%a: memref<16x16xf32>, %b: memref<16x16xf32>) {
  memref.copy %a, %b : memref<16x16xf32> to memref<16x16xf32>
  return
}

// -----

// A copy of a view onto itself (left by bufferizing a forall in place) is dropped.
// CHECK-LABEL: func.func @drops_self_copies(
// CHECK-NOT:     memref.copy
// CHECK-NOT:     linalg.copy
// CHECK:         return
func.func @drops_self_copies(%big: memref<2x8xf32>) {
  %view = memref.subview %big[0, 1] [2, 3] [1, 1] : memref<2x8xf32> to memref<2x3xf32, strided<[8, 1], offset: 1>>
  memref.copy %view, %view : memref<2x3xf32, strided<[8, 1], offset: 1>> to memref<2x3xf32, strided<[8, 1], offset: 1>>
  return
}
