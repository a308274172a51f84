// RUN: lowerline-opt %s -o /dev/null --mlir-print-ir-after-all \
// RUN:   --pass-pipeline="builtin.module(func.func(canonicalize),lowerline-widen-i1-memrefs,cse)" \
// RUN:   2>&1 | FileCheck %s

// --mlir-print-ir-after-all prints the IR after every pass, upstream and
// lowerline ones, nested ones once per function, each showing that pass's effect.
// CHECK:      // -----// IR Dump After canonicalize ('func.func' operation: @dump_after_each_pass) //----- //
// CHECK-NEXT: func.func @dump_after_each_pass(
// CHECK-NOT:    arith.addi
// CHECK:        memref.alloca() : memref<4xi1>
// CHECK:      // -----// IR Dump After lowerline-widen-i1-memrefs ('builtin.module' operation) //----- //
// CHECK-NEXT: module {
// CHECK:        memref.alloca() : memref<4xi8>
// CHECK-COUNT-2: memref.load
// CHECK:      // -----// IR Dump After cse ('builtin.module' operation) //----- //
// CHECK-NEXT: module {
// CHECK:        memref.load
// CHECK-NOT:    memref.load
// CHECK-NOT:  IR Dump After
func.func @dump_after_each_pass(%x: i32, %i: index) -> (i32, i1, i1) {
  %c0 = arith.constant 0 : i32
  %sum = arith.addi %x, %c0 : i32
  %m = memref.alloca() : memref<4xi1>
  %v0 = memref.load %m[%i] : memref<4xi1>
  %v1 = memref.load %m[%i] : memref<4xi1>
  return %sum, %v0, %v1 : i32, i1, i1
}
