// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-plan-arena)" \
// RUN:   --split-input-file | FileCheck %s

// Three buffers: %a and %b are live together, %c starts after %a's last use
// and reuses its bytes (offset 0). Each becomes a view of the trailing arena
// argument; the deallocations go. The arena is 2 x 1024 bytes, the lower
// bound too.
// CHECK-LABEL: func.func @reuses_a_dead_buffer(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: memref<16x16xf32>, %[[OUT:[a-z0-9]+]]: memref<16x16xf32>,
// CHECK-SAME:      %[[ARENA:[a-z0-9]+]]: memref<?xi8>)
// CHECK-SAME:      lowerline.arena = array<i64: 2048, 2048>
// CHECK:         %[[O1:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.+]] = memref.view %[[ARENA]][%[[O1]]][] : memref<?xi8> to memref<16x16xf32>
// CHECK:         %[[O2:.+]] = arith.constant 1024 : index
// CHECK-NEXT:    %[[B:.+]] = memref.view %[[ARENA]][%[[O2]]][] : memref<?xi8> to memref<16x16xf32>
// CHECK:         linalg.add ins(%[[X]], %[[A]] : {{.*}}) outs(%[[B]] :
// CHECK:         %[[O3:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C:.+]] = memref.view %[[ARENA]][%[[O3]]][] : memref<?xi8> to memref<16x16xf32>
// CHECK:         linalg.add ins(%[[B]], %[[B]] : {{.*}}) outs(%[[C]] :
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc
// CHECK:         return
func.func @reuses_a_dead_buffer(%x: memref<16x16xf32>, %out: memref<16x16xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<16x16xf32>)
  %b = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
  linalg.add ins(%x, %a : memref<16x16xf32>, memref<16x16xf32>) outs(%b : memref<16x16xf32>)
  memref.dealloc %a : memref<16x16xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<16x16xf32>
  linalg.add ins(%b, %b : memref<16x16xf32>, memref<16x16xf32>) outs(%c : memref<16x16xf32>)
  memref.dealloc %b : memref<16x16xf32>
  memref.copy %c, %out : memref<16x16xf32> to memref<16x16xf32>
  memref.dealloc %c : memref<16x16xf32>
  return
}

// -----

// A use through views (collapse_shape, then a subview inside a loop) keeps
// the buffer live up to the loop: %t (36 bytes) may not share bytes with %s
// (60 bytes), so it gets the next multiple of 64. %u, allocated after the
// loop, reuses %s's offset. The lower bound counts the bytes themselves
// (60 + 36), the arena their aligned placement (64 + 36).
// CHECK-LABEL: func.func @follows_views_into_loops(
// CHECK-SAME:      %[[ARENA:[a-z0-9]+]]: memref<?xi8>)
// CHECK-SAME:      lowerline.arena = array<i64: 100, 96>
// CHECK:         arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    %[[O1:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[S:.+]] = memref.view %[[ARENA]][%[[O1]]][] : memref<?xi8> to memref<3x5xf32>
// CHECK:         %[[O2:.+]] = arith.constant 64 : index
// CHECK-NEXT:    %[[T:.+]] = memref.view %[[ARENA]][%[[O2]]][] : memref<?xi8> to memref<9xf32>
// CHECK:         memref.collapse_shape %[[S]]
// CHECK:         scf.for
// CHECK:           memref.subview
// CHECK:         %[[O3:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[U:.+]] = memref.view %[[ARENA]][%[[O3]]][] : memref<?xi8> to memref<15xf32>
// CHECK-NOT:     memref.dealloc
// CHECK:         return
func.func @follows_views_into_loops(%out: memref<9xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %cst = arith.constant 2.0 : f32
  %s = memref.alloc() : memref<3x5xf32>
  %t = memref.alloc() : memref<9xf32>
  linalg.fill ins(%cst : f32) outs(%s : memref<3x5xf32>)
  %flat = memref.collapse_shape %s [[0, 1]] : memref<3x5xf32> into memref<15xf32>
  scf.for %i = %c0 to %c3 step %c1 {
    %part = memref.subview %flat[%i] [9] [1] : memref<15xf32> to memref<9xf32, strided<[1], offset: ?>>
    memref.copy %part, %t : memref<9xf32, strided<[1], offset: ?>> to memref<9xf32>
  }
  memref.dealloc %s : memref<3x5xf32>
  %u = memref.alloc() : memref<15xf32>
  linalg.fill ins(%cst : f32) outs(%u : memref<15xf32>)
  %head = memref.subview %u[0] [9] [1] : memref<15xf32> to memref<9xf32, strided<[1]>>
  linalg.add ins(%t, %head : memref<9xf32>, memref<9xf32, strided<[1]>>) outs(%out : memref<9xf32>)
  memref.dealloc %t : memref<9xf32>
  memref.dealloc %u : memref<15xf32>
  return
}

// -----

// Not planned: a dynamically shaped buffer, a buffer inside a parallel body
// (one per thread: without the threads option, the thread count is not
// known; lowerline-plan-arena-threads.mlir has the slots), and a buffer the
// function returns. The arena argument
// is still added (size 0): every entry function takes one.
// CHECK-LABEL: func.func @keeps_dynamic_parallel_and_escaping(
// CHECK-SAME:      %{{.+}}: index, %{{.+}}: memref<?xi8>) -> memref<4xf32>
// CHECK-SAME:      lowerline.arena = array<i64: 0, 0>
// CHECK:         memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK:         scf.forall
// CHECK:           memref.alloc() : memref<8xf32>
// CHECK:         memref.alloc() : memref<4xf32>
// CHECK-NOT:     memref.view
// CHECK:         return
func.func @keeps_dynamic_parallel_and_escaping(%n: index) -> memref<4xf32> {
  %cst = arith.constant 0.0 : f32
  %d = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%cst : f32) outs(%d : memref<?xf32>)
  memref.dealloc %d : memref<?xf32>
  scf.forall (%i) in (4) {
    %scratch = memref.alloc() : memref<8xf32>
    linalg.fill ins(%cst : f32) outs(%scratch : memref<8xf32>)
    memref.dealloc %scratch : memref<8xf32>
  }
  %r = memref.alloc() : memref<4xf32>
  linalg.fill ins(%cst : f32) outs(%r : memref<4xf32>)
  return %r : memref<4xf32>
}

// -----

// Only entry points change signature: a private function, and a public one
// that another function calls, keep theirs (and their allocations).
// CHECK-LABEL: func.func private @private_helper(
// CHECK-SAME:      %{{.+}}: memref<4xf32>) {
// CHECK:         memref.alloc
// CHECK-LABEL: func.func @called_helper(
// CHECK-SAME:      %{{.+}}: memref<4xf32>) {
// CHECK:         memref.alloc
// CHECK-LABEL: func.func @caller(
// CHECK-SAME:      %{{.+}}: memref<4xf32>, %{{.+}}: memref<?xi8>)
// CHECK-SAME:      lowerline.arena = array<i64: 0, 0>
func.func private @private_helper(%x: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return
}
func.func @called_helper(%x: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return
}
func.func @caller(%x: memref<4xf32>) {
  call @called_helper(%x) : (memref<4xf32>) -> ()
  call @private_helper(%x) : (memref<4xf32>) -> ()
  return
}

// -----

// Booleans take a byte each (lowerline-widen-i1-memrefs stores them so).
// CHECK-LABEL: func.func @sizes_booleans_as_bytes(
// CHECK-SAME:      lowerline.arena = array<i64: 7, 7>
// CHECK:         memref.view %{{.+}}[%{{.+}}][] : memref<?xi8> to memref<7xi1>
func.func @sizes_booleans_as_bytes(%out: memref<7xi1>) {
  %false = arith.constant false
  %a = memref.alloc() : memref<7xi1>
  linalg.fill ins(%false : i1) outs(%a : memref<7xi1>)
  memref.copy %a, %out : memref<7xi1> to memref<7xi1>
  memref.dealloc %a : memref<7xi1>
  return
}

// -----

// Not planned: a buffer an scf.if yields (its result may be the buffer, and
// is not followed).
// CHECK-LABEL: func.func @keeps_a_buffer_an_if_yields(
// CHECK-SAME:      lowerline.arena = array<i64: 0, 0>
// CHECK:         %[[A:.+]] = memref.alloc() : memref<4xf32>
// CHECK:         scf.if
// CHECK:         memref.dealloc %[[A]]
func.func @keeps_a_buffer_an_if_yields(%c: i1, %x: memref<4xf32>, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  %r = scf.if %c -> memref<4xf32> {
    scf.yield %a : memref<4xf32>
  } else {
    scf.yield %x : memref<4xf32>
  }
  memref.copy %r, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// A buffer stored into (an element: memref.store's operand 1) stays planned;
// a buffer stored as the value (into a memref of memrefs) escapes.
// CHECK-LABEL: func.func @plans_a_buffer_stored_into(
// CHECK-SAME:      lowerline.arena = array<i64: 16, 16>
// CHECK:         %[[A:.+]] = memref.view %{{.+}}[%{{.+}}][] : memref<?xi8> to memref<4xf32>
// CHECK-NEXT:    memref.store %{{.+}}, %[[A]][
// CHECK:         %[[B:.+]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    memref.store %[[B]], %{{.+}}[
func.func @plans_a_buffer_stored_into(%v: f32, %holder: memref<1xmemref<4xf32>>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xf32>
  memref.store %v, %a[%c0] : memref<4xf32>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  memref.store %b, %holder[%c0] : memref<1xmemref<4xf32>>
  memref.dealloc %a : memref<4xf32>
  return
}
