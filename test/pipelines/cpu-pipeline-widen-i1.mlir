// The widen-i1 option of lowerline-cpu-pipeline: on by default, bool tensors
// end as bytes (torch's layout); off, as i1. The functions only copy booleans:
// with widen-i1=false finalize-memref-to-llvm aborts on any load or store of
// an i1 memref, so none is here.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline)" \
// RUN:   | FileCheck %s --check-prefix=WIDE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline{widen-i1=true})" \
// RUN:   | FileCheck %s --check-prefix=WIDE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline{widen-i1=false})" \
// RUN:   | FileCheck %s --check-prefix=NARROW

// A constant bool tensor becomes a global of bytes.
// WIDE:        llvm.mlir.global private constant @[[G:.+]](dense<[1, 0, 0, 1]> : tensor<4xi8>)
// WIDE-SAME:       : !llvm.array<4 x i8>
// NARROW:      llvm.mlir.global private constant @[[G:.+]](dense<[true, false, false, true]> : tensor<4xi1>)
// NARROW-SAME:     : !llvm.array<4 x i1>

// A returned bool argument is copied into the out-param, sized by bytes.
// WIDE-LABEL:   llvm.func @pass_mask_through(
// WIDE:           llvm.getelementptr %{{.+}}[1] : (!llvm.ptr) -> !llvm.ptr, i8
// WIDE:           "llvm.intr.memcpy"
// NARROW-LABEL: llvm.func @pass_mask_through(
// NARROW:         llvm.getelementptr %{{.+}}[1] : (!llvm.ptr) -> !llvm.ptr, i1
// NARROW:         "llvm.intr.memcpy"
func.func @pass_mask_through(%m: tensor<7x13xi1>) -> tensor<7x13xi1> {
  return %m : tensor<7x13xi1>
}

// WIDE-LABEL:   llvm.func @constant_mask(
// WIDE:           llvm.mlir.addressof @[[G]]
// WIDE:           "llvm.intr.memcpy"
// WIDE-LABEL:   llvm.func @_mlir_ciface_constant_mask(
// NARROW-LABEL: llvm.func @constant_mask(
// NARROW:         llvm.mlir.addressof @[[G]]
// NARROW:         "llvm.intr.memcpy"
// NARROW-LABEL: llvm.func @_mlir_ciface_constant_mask(
func.func @constant_mask() -> tensor<4xi1> {
  %c = arith.constant dense<[true, false, false, true]> : tensor<4xi1>
  return %c : tensor<4xi1>
}
