// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-strided-copies-to-linalg))" \
// RUN:   --split-input-file | FileCheck %s
// With vector-rows=0 (the GPU path, which maps linalg.copy to threads) every
// strided copy is a linalg.copy.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-strided-copies-to-linalg{vector-rows=0}))" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=LINALG

// A copy into a padded buffer's interior (a strided view) becomes loops over
// its outer dims with one vector read and write per row.
// CHECK-LABEL: func.func @copies_into_a_padded_interior(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4x6x6xf32>
// CHECK:         %[[VIEW:.+]] = memref.subview
// CHECK:         scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step
// CHECK:           scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step
// CHECK:             %[[ROW:.+]] = vector.transfer_read %[[X]][%[[I]], %[[J]], %{{.+}}], %{{.+}} {in_bounds = [true]} : memref<4x6x6xf32>, vector<6xf32>
// CHECK:             vector.transfer_write %[[ROW]], %[[VIEW]][%[[I]], %[[J]], %{{.+}}] {in_bounds = [true]} : vector<6xf32>, memref<4x6x6xf32, strided<[64, 8, 1], offset: 9>>
// CHECK-NOT:     memref.copy
// CHECK-NOT:     linalg.copy
// CHECK:         return
// LINALG-LABEL:  func.func @copies_into_a_padded_interior(
// LINALG:          linalg.copy {{.*}}outs(%{{.+}} : memref<4x6x6xf32, strided<[64, 8, 1], offset: 9>>)
// LINALG-NOT:      vector.transfer_read
func.func @copies_into_a_padded_interior(%x: memref<4x6x6xf32>, %padded: memref<4x8x8xf32>) {
  %view = memref.subview %padded[0, 1, 1] [4, 6, 6] [1, 1, 1] : memref<4x8x8xf32> to memref<4x6x6xf32, strided<[64, 8, 1], offset: 9>>
  memref.copy %x, %view : memref<4x6x6xf32> to memref<4x6x6xf32, strided<[64, 8, 1], offset: 9>>
  return
}

// -----

// Reading from a strided view counts as well; a unit outer dim gets no loop.
// CHECK-LABEL: func.func @copies_out_of_a_strided_view(
// CHECK:         scf.for
// CHECK:           vector.transfer_read %{{.+}} : memref<1x2x3xf32, strided<[16, 8, 1], offset: 1>>, vector<3xf32>
// CHECK-NOT:     scf.for
// CHECK-NOT:     memref.copy
func.func @copies_out_of_a_strided_view(%big: memref<1x2x8xf32>, %out: memref<1x2x3xf32>) {
  %view = memref.subview %big[0, 0, 1] [1, 2, 3] [1, 1, 1] : memref<1x2x8xf32> to memref<1x2x3xf32, strided<[16, 8, 1], offset: 1>>
  memref.copy %view, %out : memref<1x2x3xf32, strided<[16, 8, 1], offset: 1>> to memref<1x2x3xf32>
  return
}

// -----

// Rows that are not contiguous (every other element) or not static stay one
// linalg.copy (scalar loops).
// CHECK-LABEL: func.func @keeps_linalg_copy_for_gapped_rows(
// CHECK:         linalg.copy {{.*}}ins(%{{.+}} : memref<4x4xf32, strided<[8, 2]>>) outs(%{{.+}} : memref<4x4xf32, strided<[8, 2], offset: 1>>)
// CHECK-NOT:     vector.transfer_read
func.func @keeps_linalg_copy_for_gapped_rows(%big: memref<4x8xf32>) {
  %a = memref.subview %big[0, 0] [4, 4] [1, 2] : memref<4x8xf32> to memref<4x4xf32, strided<[8, 2]>>
  %b = memref.subview %big[0, 1] [4, 4] [1, 2] : memref<4x8xf32> to memref<4x4xf32, strided<[8, 2], offset: 1>>
  memref.copy %a, %b : memref<4x4xf32, strided<[8, 2]>> to memref<4x4xf32, strided<[8, 2], offset: 1>>
  return
}

// -----

// CHECK-LABEL: func.func @keeps_linalg_copy_for_dynamic_rows(
// CHECK:         linalg.copy
// CHECK-NOT:     vector.transfer_read
func.func @keeps_linalg_copy_for_dynamic_rows(%big: memref<4x?xf32>, %n: index) {
  %a = memref.subview %big[0, 0] [2, %n] [1, 1] : memref<4x?xf32> to memref<2x?xf32, strided<[?, 1]>>
  %b = memref.subview %big[2, 0] [2, %n] [1, 1] : memref<4x?xf32> to memref<2x?xf32, strided<[?, 1], offset: ?>>
  memref.copy %a, %b : memref<2x?xf32, strided<[?, 1]>> to memref<2x?xf32, strided<[?, 1], offset: ?>>
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

// -----

// Complex elements have no vector type: a strided copy of them (a complex
// concatenation's operand) is a linalg.copy, never a vector transfer.
// CHECK-LABEL: func.func @copies_complex_rows_as_linalg_copy(
// CHECK:         linalg.copy {{.*}}outs(%{{.+}} : memref<3x5xcomplex<f64>, strided<[5, 1], offset: 10>>)
// CHECK-NOT:     vector.transfer_read
// CHECK-NOT:     memref.copy
func.func @copies_complex_rows_as_linalg_copy(%x: memref<3x5xcomplex<f64>>, %cat: memref<5x5xcomplex<f64>>) {
  %view = memref.subview %cat[2, 0] [3, 5] [1, 1] : memref<5x5xcomplex<f64>> to memref<3x5xcomplex<f64>, strided<[5, 1], offset: 10>>
  memref.copy %x, %view : memref<3x5xcomplex<f64>> to memref<3x5xcomplex<f64>, strided<[5, 1], offset: 10>>
  return
}
