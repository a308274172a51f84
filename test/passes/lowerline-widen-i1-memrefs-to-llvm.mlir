// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" | FileCheck %s

// lowerline-to-llvm widens before finalize-memref-to-llvm (which aborts on i1 loads and stores): a byte is stored.
// CHECK-LABEL: llvm.func @store_mask_reaches_llvm_as_byte(
// CHECK-SAME:      %[[B:[a-z0-9]+]]: i1)
// CHECK:         %[[W:.+]] = llvm.zext %[[B]] : i1 to i8
// CHECK:         llvm.store %[[W]], %{{.+}} : i8, !llvm.ptr
// CHECK-NOT:     memref.
// CHECK:         llvm.return
func.func @store_mask_reaches_llvm_as_byte(%m: memref<4xi1>, %b: i1) {
  %c0 = arith.constant 0 : index
  memref.store %b, %m[%c0] : memref<4xi1>
  return
}
