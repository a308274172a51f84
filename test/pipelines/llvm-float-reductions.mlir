// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" | FileCheck %s

// A vector's horizontal float sum may be reassociated (LLVM then adds the
// lanes as a tree of shuffles, not 64 additions one after another): the
// lanes were accumulated separately in the loop before it anyway.
// CHECK-LABEL: llvm.func @row_sum(
// CHECK:         llvm.intr.vector.reduce.fadd
// CHECK-SAME:        fastmath<reassoc>
// An integer sum is exact in any order and carries no flag.
// CHECK-LABEL: llvm.func @int_sum(
// CHECK:         "llvm.intr.vector.reduce.add"(%{{.+}}) : (vector<64xi32>) -> i32
func.func @row_sum(%x: memref<64xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %v = vector.transfer_read %x[%c0], %zero {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %s = vector.reduction <add>, %v, %zero : vector<64xf32> into f32
  memref.store %s, %out[%c0] : memref<1xf32>
  return
}
func.func @int_sum(%x: memref<64xi32>, %out: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i32
  %v = vector.transfer_read %x[%c0], %zero {in_bounds = [true]} : memref<64xi32>, vector<64xi32>
  %s = vector.reduction <add>, %v, %zero : vector<64xi32> into i32
  memref.store %s, %out[%c0] : memref<1xi32>
  return
}
