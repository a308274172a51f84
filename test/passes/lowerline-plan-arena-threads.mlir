// lowerline-plan-arena's per-thread slots for the scratch of parallel loops
// (the threads option; lowerline-plan-arena.mlir has the rest of the pass).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-plan-arena{threads=3})" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-plan-arena{threads=1})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=ONE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-plan-arena)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-plan-arena{threads=3 explain})" \
// RUN:   --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// threads=3 (the loops stage's OpenMP team size): the forall body's scratch
// %a (32 bytes) and %b (20 bytes, live with %a) are planned in one 128-byte
// slot (%a at 0, %b at 64), and the arena holds a slot per thread (3 x 128 =
// 384 bytes) beside %t (128 bytes, live across the loop). A tile's buffers
// are views at tid x 128 + their offset in the slot, the thread number read
// in the body. The lower bound counts the scratch's live bytes once per
// thread: 128 + 3 x (32 + 20) = 284.
// CHECK:       llvm.func @omp_get_thread_num() -> i32
// CHECK-LABEL: func.func @parallel_scratch(
// CHECK-SAME:      %[[ARENA:[a-z0-9]+]]: memref<?xi8>)
// CHECK-SAME:      lowerline.arena = array<i64: 512, 284>
// CHECK:         %[[OT:.+]] = arith.constant 384 : index
// CHECK-NEXT:    %[[T:.+]] = memref.view %[[ARENA]][%[[OT]]][] : memref<?xi8> to memref<4x8xf32>
// CHECK:         scf.forall
// CHECK-NEXT:      %[[TID32:.+]] = llvm.call @omp_get_thread_num() : () -> i32
// CHECK-NEXT:      %[[TID:.+]] = arith.index_cast %[[TID32]] : i32 to index
// CHECK-NEXT:      %[[SLOT:.+]] = arith.constant 128 : index
// CHECK-NEXT:      %[[START:.+]] = arith.muli %[[TID]], %[[SLOT]] : index
// CHECK-NEXT:      %[[REGION:.+]] = arith.constant 0 : index
// CHECK-NEXT:      %[[BASE:.+]] = arith.addi %[[START]], %[[REGION]] : index
// CHECK-NEXT:      %[[OA:.+]] = arith.constant 0 : index
// CHECK-NEXT:      %[[AT:.+]] = arith.addi %[[BASE]], %[[OA]] : index
// CHECK-NEXT:      %[[A:.+]] = memref.view %[[ARENA]][%[[AT]]][] : memref<?xi8> to memref<8xf32>
// CHECK-NEXT:      %[[OB:.+]] = arith.constant 64 : index
// CHECK-NEXT:      %[[BT:.+]] = arith.addi %[[BASE]], %[[OB]] : index
// CHECK-NEXT:      %[[B:.+]] = memref.view %[[ARENA]][%[[BT]]][] : memref<?xi8> to memref<5xf32>
// CHECK:           memref.copy %{{.+}}, %[[A]]
// CHECK:           linalg.fill ins(%{{.+}} : f32) outs(%[[B]] :
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc
// CHECK:         return
//
// threads=1 (scf-forall-to-for: the tiles run one after the other): one
// slot, at 128 after %t, no thread number.
// ONE-NOT:     llvm.func
// ONE-LABEL:   func.func @parallel_scratch(
// ONE-SAME:        lowerline.arena = array<i64: 256, 180>
// ONE:           scf.forall
// ONE-NEXT:        %[[OA:.+]] = arith.constant 128 : index
// ONE-NEXT:        memref.view %{{.+}}[%[[OA]]][] : memref<?xi8> to memref<8xf32>
// ONE-NEXT:        %[[OB:.+]] = arith.constant 192 : index
// ONE-NEXT:        memref.view %{{.+}}[%[[OB]]][] : memref<?xi8> to memref<5xf32>
// ONE-NOT:       memref.alloc
// ONE-NOT:       llvm.call
// ONE:           return
//
// No threads option (a runtime without thread numbers): the scratch stays
// allocated per tile.
// NONE-NOT:    llvm.func
// NONE-LABEL:  func.func @parallel_scratch(
// NONE-SAME:       lowerline.arena = array<i64: 128, 128>
// NONE:          scf.forall
// NONE-NEXT:       memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// NONE-NEXT:       memref.alloc() {alignment = 64 : i64} : memref<5xf32>
func.func @parallel_scratch(%x: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %cst = arith.constant 1.0 : f32
  %t = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
  linalg.add ins(%x, %x : memref<4x8xf32>, memref<4x8xf32>) outs(%t : memref<4x8xf32>)
  scf.forall (%i) in (4) {
    %a = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
    %b = memref.alloc() {alignment = 64 : i64} : memref<5xf32>
    %row = memref.subview %t[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    memref.copy %row, %a : memref<8xf32, strided<[1], offset: ?>> to memref<8xf32>
    linalg.fill ins(%cst : f32) outs(%b : memref<5xf32>)
    %o = memref.subview %out[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    memref.copy %a, %o : memref<8xf32> to memref<8xf32, strided<[1], offset: ?>>
    memref.dealloc %a : memref<8xf32>
    memref.dealloc %b : memref<5xf32>
  }
  memref.dealloc %t : memref<4x8xf32>
  return
}

// -----

// Not in slots, with threads=3 too: the scratch of a nested forall (each of
// the outer loop's threads may run an inner team), dynamically shaped
// buffers and one that a sequential loop in the body allocates. The outer
// body's own static scratch is planned: 3 slots of 64 bytes, 3 x 16 bytes
// live. With explain, each allocation left is reported, with the reason.
// REMARK-NOT:  remark
// REMARK:      remark: memref.alloc: {{.*}}: its size is dynamic and has no known maximum
// REMARK:      remark: memref.alloc: left to malloc at every call: its size is dynamic and has no known maximum
// REMARK:      remark: memref.alloc: left to malloc at every call: it is in a sequential loop or a branch
// REMARK:      remark: memref.alloc: left to malloc at every call: it is in a nested parallel loop
// REMARK-NOT:  remark
// CHECK-LABEL: func.func @keeps_nested_and_dynamic_scratch(
// CHECK-SAME:      lowerline.arena = array<i64: 192, 48>
// CHECK:         scf.forall
// CHECK-NEXT:      llvm.call @omp_get_thread_num()
// CHECK:           memref.view %{{.+}}[%{{.+}}][] : memref<?xi8> to memref<4xf32>
// CHECK:           memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK:           scf.for
// CHECK-NEXT:        memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK:             memref.alloc() : memref<2xf32>
// CHECK:           scf.forall
// CHECK-NEXT:        memref.alloc() : memref<8xf32>
func.func @keeps_nested_and_dynamic_scratch(%n: index) {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.forall (%i) in (4) {
    %own = memref.alloc() : memref<4xf32>
    linalg.fill ins(%cst : f32) outs(%own : memref<4xf32>)
    memref.dealloc %own : memref<4xf32>
    %d = memref.alloc(%n) : memref<?xf32>
    linalg.fill ins(%cst : f32) outs(%d : memref<?xf32>)
    memref.dealloc %d : memref<?xf32>
    scf.for %j = %c0 to %n step %c1 {
      %e = memref.alloc(%j) : memref<?xf32>
      linalg.fill ins(%cst : f32) outs(%e : memref<?xf32>)
      memref.dealloc %e : memref<?xf32>
      %s = memref.alloc() : memref<2xf32>
      linalg.fill ins(%cst : f32) outs(%s : memref<2xf32>)
      memref.dealloc %s : memref<2xf32>
    }
    scf.forall (%k) in (2) {
      %inner = memref.alloc() : memref<8xf32>
      linalg.fill ins(%cst : f32) outs(%inner : memref<8xf32>)
      memref.dealloc %inner : memref<8xf32>
    }
  }
  return
}
