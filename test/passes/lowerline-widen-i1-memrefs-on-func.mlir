// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-widen-i1-memrefs))" \
// RUN:   --split-input-file | FileCheck %s

// A buffer local to the function is widened, block arguments of later blocks included.
// CHECK-LABEL: func.func @widens_local_buffer_across_blocks(
// CHECK-SAME:      %[[B:[a-z0-9]+]]: i1, %[[P:[a-z0-9]+]]: i1) -> i1
// CHECK:         %[[A:.+]] = memref.alloca() : memref<4xi8>
// CHECK:         cf.cond_br %[[P]], ^[[BB1:.+]](%[[A]] : memref<4xi8>), ^[[BB2:[a-z0-9]+]]
// CHECK:       ^[[BB1]](%[[X:.+]]: memref<4xi8>):
// CHECK:         %[[W:.+]] = arith.extui %[[B]] : i1 to i8
// CHECK:         memref.store %[[W]], %[[X]][%{{.+}}] : memref<4xi8>
// CHECK:       ^[[BB2]]:
// CHECK:         %[[L:.+]] = memref.load %[[A]][%{{.+}}] : memref<4xi8>
// CHECK:         %[[T:.+]] = arith.trunci %[[L]] : i8 to i1
// CHECK:         return %[[T]] : i1
func.func @widens_local_buffer_across_blocks(%b: i1, %p: i1) -> i1 {
  %c0 = arith.constant 0 : index
  %m = memref.alloca() : memref<4xi1>
  cf.cond_br %p, ^bb1(%m : memref<4xi1>), ^bb2
^bb1(%x: memref<4xi1>):
  memref.store %b, %x[%c0] : memref<4xi1>
  cf.br ^bb2
^bb2:
  %v = memref.load %m[%c0] : memref<4xi1>
  return %v : i1
}

// -----

// Each function is widened on its own; one without i1 memrefs is left alone.
// CHECK-LABEL: func.func @first_local_buffer(
// CHECK:         memref.alloc() : memref<2xi8>
// CHECK-LABEL: func.func @second_without_i1_memrefs(
// CHECK-NOT:     arith.extui
// CHECK:         memref.alloc() : memref<2xf32>
// CHECK-NOT:     i8
// CHECK:         return
func.func @first_local_buffer() {
  %m = memref.alloc() : memref<2xi1>
  memref.dealloc %m : memref<2xi1>
  return
}
func.func @second_without_i1_memrefs() {
  %m = memref.alloc() : memref<2xf32>
  memref.dealloc %m : memref<2xf32>
  return
}
