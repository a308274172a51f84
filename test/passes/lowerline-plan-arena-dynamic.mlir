// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-plan-arena)" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-plan-arena{explain=true})" \
// RUN:   --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// Argument 0's dim 0 ranges over [1, 7] (lowerline.dynamic_ranges): %a
// (?x5xf32, sized by that dim) is planned at 7 x 5 x 4 = 140 bytes, %b
// (2*? x 3 x i8, index arithmetic of it) at 14 x 3 = 42 bytes, at the next
// multiple of 64. Each becomes a view of the arena with the call's actual
// sizes; nothing is allocated at call time.
// CHECK-LABEL: func.func @bounded_dynamic_sizes(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: memref<?x5xf32>, %{{.+}}: memref<?x5xf32>, %{{.+}}: memref<?x3xi8>,
// CHECK-SAME:      %[[ARENA:[a-z0-9]+]]: memref<?xi8>)
// CHECK-SAME:      lowerline.arena = array<i64: 234, 182>
// CHECK:         %[[N:.+]] = memref.dim %[[X]], %{{.+}} : memref<?x5xf32>
// CHECK:         %[[O1:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.+]] = memref.view %[[ARENA]][%[[O1]]][%[[N]]] : memref<?xi8> to memref<?x5xf32>
// CHECK:         %[[M:.+]] = arith.muli %[[N]], %{{.+}} : index
// CHECK:         %[[O2:.+]] = arith.constant 192 : index
// CHECK-NEXT:    %[[B:.+]] = memref.view %[[ARENA]][%[[O2]]][%[[M]]] : memref<?xi8> to memref<?x3xi8>
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc
// CHECK:         return
// REMARK-NOT: left to malloc
func.func @bounded_dynamic_sizes(%x: memref<?x5xf32>, %out: memref<?x5xf32>, %out2: memref<?x3xi8>)
    attributes {lowerline.dynamic_ranges = array<i64: 0, 0, 1, 7>} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %cst = arith.constant 1.0 : f32
  %c1_i8 = arith.constant 1 : i8
  %n = memref.dim %x, %c0 : memref<?x5xf32>
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x5xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<?x5xf32>)
  %m = arith.muli %n, %c2 : index
  %b = memref.alloc(%m) {alignment = 64 : i64} : memref<?x3xi8>
  linalg.fill ins(%c1_i8 : i8) outs(%b : memref<?x3xi8>)
  memref.copy %a, %out : memref<?x5xf32> to memref<?x5xf32>
  memref.copy %b, %out2 : memref<?x3xi8> to memref<?x3xi8>
  memref.dealloc %a : memref<?x5xf32>
  memref.dealloc %b : memref<?x3xi8>
  return
}

// -----

// No range: the same dynamic buffer stays an allocation at every call, the
// arena is empty, and the refusal says why.
// CHECK-LABEL: func.func @unbounded_dynamic_size(
// CHECK-SAME:      lowerline.arena = array<i64: 0, 0>
// CHECK:         memref.alloc(%{{.+}}) {alignment = 64 : i64} : memref<?x5xf32>
// CHECK:         memref.dealloc
// REMARK: left to malloc at every call: its size is dynamic and has no known maximum
func.func @unbounded_dynamic_size(%x: memref<?x5xf32>, %out: memref<?x5xf32>) {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?x5xf32>
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x5xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<?x5xf32>)
  memref.copy %a, %out : memref<?x5xf32> to memref<?x5xf32>
  memref.dealloc %a : memref<?x5xf32>
  return
}

// -----

// A range on another dim of the argument does not bound dim 0: refused.
// CHECK-LABEL: func.func @range_of_another_dim(
// CHECK-SAME:      lowerline.arena = array<i64: 0, 0>
// CHECK:         memref.alloc(%{{.+}})
// REMARK: left to malloc at every call: its size is dynamic and has no known maximum
func.func @range_of_another_dim(%x: memref<?x?xf32>, %out: memref<?xf32>)
    attributes {lowerline.dynamic_ranges = array<i64: 0, 1, 1, 9>} {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %a = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<?xf32>)
  memref.copy %a, %out : memref<?xf32> to memref<?xf32>
  memref.dealloc %a : memref<?xf32>
  return
}

// -----

// Sizes through affine.apply: a map that never decreases as its operands
// grow is bounded at their maxima, (13 ceildiv 4) + 1 = 5 rows of 16 x f32
// = 320 bytes; one with a mod (not monotone) is not, and stays malloc.
// CHECK-LABEL: func.func @affine_sizes(
// CHECK-SAME:      %[[ARENA:[a-z0-9]+]]: memref<?xi8>)
// CHECK-SAME:      lowerline.arena = array<i64: 320, 320>
// CHECK:         %[[K:.+]] = affine.apply
// CHECK:         memref.view %[[ARENA]][%{{.+}}][%[[K]]] : memref<?xi8> to memref<?x16xf32>
// CHECK:         %[[R:.+]] = affine.apply
// CHECK:         memref.alloc(%[[R]]) : memref<?xf32>
// REMARK: remark: memref.alloc: left to malloc at every call: its size is dynamic and has no known maximum
func.func @affine_sizes(%x: memref<3x?xf32>, %out: memref<?x16xf32>, %out2: memref<?xf32>)
    attributes {lowerline.dynamic_ranges = array<i64: 0, 1, 2, 13>} {
  %c1 = arith.constant 1 : index
  %cst = arith.constant 1.0 : f32
  %n = memref.dim %x, %c1 : memref<3x?xf32>
  %k = affine.apply affine_map<()[s0] -> (s0 ceildiv 4 + 1)>()[%n]
  %a = memref.alloc(%k) : memref<?x16xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<?x16xf32>)
  memref.copy %a, %out : memref<?x16xf32> to memref<?x16xf32>
  %r = affine.apply affine_map<(d0) -> (d0 mod 5)>(%n)
  %b = memref.alloc(%r) : memref<?xf32>
  linalg.fill ins(%cst : f32) outs(%b : memref<?xf32>)
  memref.copy %b, %out2 : memref<?xf32> to memref<?xf32>
  return
}
