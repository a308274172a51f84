// The widen-i1 option of lowerline-to-llvm: on by default; off, i1 memrefs
// keep one i1 slot per element. The input only copies and allocates booleans:
// with widen-i1=false finalize-memref-to-llvm aborts on any load or store of
// an i1 memref, so none is here.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" \
// RUN:   | FileCheck %s --check-prefix=WIDE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm{widen-i1=true})" \
// RUN:   | FileCheck %s --check-prefix=WIDE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm{widen-i1=false})" \
// RUN:   | FileCheck %s --check-prefix=NARROW

// The copy's byte count and addresses are computed from the element type.
// WIDE-LABEL:   llvm.func @copy_mask(
// WIDE:           llvm.getelementptr %{{.+}}[1] : (!llvm.ptr) -> !llvm.ptr, i8
// WIDE:           "llvm.intr.memcpy"
// WIDE-LABEL:   llvm.func @_mlir_ciface_copy_mask(
// NARROW-LABEL: llvm.func @copy_mask(
// NARROW:         llvm.getelementptr %{{.+}}[1] : (!llvm.ptr) -> !llvm.ptr, i1
// NARROW:         "llvm.intr.memcpy"
// NARROW-LABEL: llvm.func @_mlir_ciface_copy_mask(
func.func @copy_mask(%arg0: memref<7x13xi1>, %arg1: memref<7x13xi1>) {
  memref.copy %arg0, %arg1 : memref<7x13xi1> to memref<7x13xi1>
  return
}

// WIDE-LABEL:   llvm.func @alloc_mask(
// WIDE:           llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// WIDE:           llvm.call @_mlir_memref_to_llvm_alloc
// NARROW-LABEL: llvm.func @alloc_mask(
// NARROW:         llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, i1
// NARROW:         llvm.call @_mlir_memref_to_llvm_alloc
func.func @alloc_mask(%n: index) {
  %a = memref.alloc(%n) : memref<?x13xi1>
  memref.dealloc %a : memref<?x13xi1>
  return
}
