// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" \
// RUN:   | FileCheck %s --check-prefix=WIDEN
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm{widen-i1=true})" \
// RUN:   | FileCheck %s --check-prefix=WIDEN
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm{widen-i1=false})" \
// RUN:   | FileCheck %s --check-prefix=NARROW
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline{widen-i1=false})" \
// RUN:   | FileCheck %s --check-prefix=CPU

// A named pipeline takes options: widen-i1=false drops lowerline-widen-i1-memrefs
// from lowerline-to-llvm, so the i1 buffer is allocated as bits, not bytes.
// WIDEN-LABEL:  llvm.func @alloc_i1_buffer(
// WIDEN:          llvm.getelementptr %{{.+}}[4] : (!llvm.ptr) -> !llvm.ptr, i8
// WIDEN:          llvm.call @_mlir_memref_to_llvm_alloc
// NARROW-LABEL: llvm.func @alloc_i1_buffer(
// NARROW:         llvm.getelementptr %{{.+}}[4] : (!llvm.ptr) -> !llvm.ptr, i1
// NARROW:         llvm.call @_mlir_memref_to_llvm_alloc
// The whole CPU pipeline accepts the same option.
// CPU-LABEL:    llvm.func @alloc_i1_buffer(
// CPU:            llvm.return
func.func @alloc_i1_buffer() {
  %m = memref.alloc() : memref<4xi1>
  memref.dealloc %m : memref<4xi1>
  return
}
