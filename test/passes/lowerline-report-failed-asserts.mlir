// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-report-failed-asserts)" \
// RUN:   --split-input-file | FileCheck %s

// An index check in a loop: the load it guards moves under scf.if, the
// failure is reported, the iteration yields a zero and the loop goes on.
// CHECK:       func.func private @lowerline_assert_failed(!llvm.ptr)
// CHECK-LABEL: func.func @checked_gather(
// CHECK-NOT:     cf.assert
// CHECK:         scf.for {{.*}} iter_args(%[[ACC:.*]] = {{.*}}) -> (f32) {
// CHECK:           %[[OK:.*]] = arith.cmpi slt
// CHECK:           %[[R:.*]] = scf.if %[[OK]] -> (f32) {
// CHECK:             memref.load
// CHECK:             %[[SUM:.*]] = arith.addf %[[ACC]]
// CHECK:             scf.yield %[[SUM]] : f32
// CHECK:           } else {
// CHECK:             %[[MSG:.*]] = llvm.mlir.addressof @__lowerline_assert_0 : !llvm.ptr
// CHECK:             func.call @lowerline_assert_failed(%[[MSG]]) : (!llvm.ptr) -> ()
// CHECK:             %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:             scf.yield %[[Z]] : f32
// CHECK:           }
// CHECK:           scf.yield %[[R]] : f32
// CHECK:       llvm.mlir.global internal constant @__lowerline_assert_0("index must be smaller than dim size (at {{.*}}lowerline-report-failed-asserts.mlir:32:5)\00")
func.func @checked_gather(%table: memref<8xf32>, %idx: memref<4xindex>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %j = memref.load %idx[%i] : memref<4xindex>
    %ok = arith.cmpi slt, %j, %c8 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = memref.load %table[%j] : memref<8xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  return %sum : f32
}

// -----

// The message keeps the assert's location; an assert right before the
// terminator guards nothing but still reports.
// CHECK-LABEL: func.func @last_in_block(
// CHECK:         scf.if %{{.*}} {
// CHECK-NEXT:    } else {
// CHECK-NEXT:      llvm.mlir.addressof @__lowerline_assert_0
// CHECK-NEXT:      func.call @lowerline_assert_failed
// CHECK:         return
// CHECK: llvm.mlir.global internal constant @__lowerline_assert_0("stride must be fixed (at model.py:3:7)\00")
func.func @last_in_block(%ok: i1) {
  cf.assert %ok, "stride must be fixed" loc("model.py":3:7)
  return
}

// -----

// No cf.assert: nothing changes, no declaration is added.
// CHECK-LABEL: func.func @no_assert(
// CHECK-NOT:   lowerline_assert_failed
// CHECK-NOT:   llvm.mlir.global
func.func @no_assert(%m: memref<4xf32>, %i: index) -> f32 {
  %v = memref.load %m[%i] : memref<4xf32>
  return %v : f32
}

// -----

// The guarded work defines a memref: no stand-in exists, the assert stays.
// CHECK-LABEL: func.func @memref_after_assert(
// CHECK:         cf.assert
func.func @memref_after_assert(%ok: i1, %m: memref<8xf32>) -> memref<4xf32> {
  cf.assert %ok, "size must be 4"
  %s = memref.subview %m[0] [4] [1] : memref<8xf32> to memref<4xf32>
  return %s : memref<4xf32>
}

// -----

// A message global of an earlier run keeps its name; the new one takes the next.
// CHECK:       llvm.mlir.global internal constant @__lowerline_assert_0("earlier\00")
// CHECK-LABEL: func.func @second_run(
// CHECK:         llvm.mlir.addressof @__lowerline_assert_1
// CHECK:       llvm.mlir.global internal constant @__lowerline_assert_1("later (at {{.*}})\00")
llvm.mlir.global internal constant @__lowerline_assert_0("earlier\00") {addr_space = 0 : i32}
func.func @second_run(%ok: i1) {
  cf.assert %ok, "later"
  return
}

// -----

// Entries with an arena (lowerline-plan-arena): the failure goes to an 8-byte
// word of the call's arena past the planned 68 bytes (at 72, the arena grows
// to 80), compare-and-swapped from zero, on whichever thread fails. No
// library slot: nothing is declared. An entry without a check gets -1.
// CHECK-NOT:   lowerline_assert_failed
// CHECK-LABEL: func.func @arena_entry(
// CHECK-SAME:    %[[ARENA:[^:]*]]: memref<?xi8>)
// CHECK-SAME:    lowerline.arena = array<i64: 80, 64>, lowerline.failure_record = 72 : i64
// CHECK:         scf.parallel
// CHECK:           } else {
// CHECK:             %[[MSG:.*]] = llvm.mlir.addressof @__lowerline_assert_0 : !llvm.ptr
// CHECK:             %[[ADDR:.*]] = llvm.ptrtoint %[[MSG]] : !llvm.ptr to i64
// CHECK:             %[[AT:.*]] = arith.constant 72 : index
// CHECK:             %[[WORD:.*]] = memref.view %[[ARENA]][%[[AT]]][] : memref<?xi8> to memref<i64>
// CHECK:             memref.generic_atomic_rmw %[[WORD]][] : memref<i64> {
// CHECK:             ^bb0(%[[OLD:.*]]: i64):
// CHECK:               %[[FREE:.*]] = arith.cmpi eq, %[[OLD]], %{{.*}} : i64
// CHECK:               %[[NEW:.*]] = arith.select %[[FREE]], %[[ADDR]], %[[OLD]] : i64
// CHECK:               memref.atomic_yield %[[NEW]] : i64
// CHECK-LABEL: func.func @arena_no_check(
// CHECK-SAME:    lowerline.arena = array<i64: 64, 64>, lowerline.failure_record = -1 : i64
// CHECK-NOT:   lowerline_assert_failed
func.func @arena_entry(%x: memref<4xindex>, %t: memref<8xf32>, %out: memref<4xf32>, %arena: memref<?xi8>) attributes {lowerline.arena = array<i64: 68, 64>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %j = memref.load %x[%i] : memref<4xindex>
    %ok = arith.cmpi ult, %j, %c8 : index
    cf.assert %ok, "index out of range"
    %v = memref.load %t[%j] : memref<8xf32>
    memref.store %v, %out[%i] : memref<4xf32>
    scf.reduce
  }
  return
}
func.func @arena_no_check(%out: memref<4xf32>, %arena: memref<?xi8>) attributes {lowerline.arena = array<i64: 64, 64>} {
  return
}

// -----

// One assert in a function without an arena: every assert of the module
// goes to the library's slot, no entry gets a failure word.
// CHECK:       func.func private @lowerline_assert_failed(!llvm.ptr)
// CHECK-LABEL: func.func @arena_but_slot(
// CHECK-SAME:    lowerline.arena = array<i64: 64, 64>}
// CHECK:         func.call @lowerline_assert_failed
// CHECK-LABEL: func.func @no_arena(
// CHECK:         func.call @lowerline_assert_failed
func.func @arena_but_slot(%ok: i1, %arena: memref<?xi8>) attributes {lowerline.arena = array<i64: 64, 64>} {
  cf.assert %ok, "in the entry"
  return
}
func.func @no_arena(%ok: i1) {
  cf.assert %ok, "elsewhere"
  return
}
