// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(scf-forall-to-parallel),convert-scf-to-openmp{num-threads=2},lowerline-dynamic-omp-schedule)" \
// RUN:   --split-input-file | FileCheck %s

// 8 x 7 parallel tiles: handed out one at a time.
// CHECK-LABEL: func.func @many_tiles(
// CHECK:         omp.wsloop schedule(dynamic) {
// CHECK-NEXT:      omp.loop_nest
func.func @many_tiles(%m: memref<8x7xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i, %j) in (8, 7) {
    memref.store %one, %m[%i, %j] : memref<8x7xf32>
  }
  return
}

// -----

// Two tiles on two threads: nothing to balance, the static schedule stays.
// CHECK-LABEL: func.func @one_tile_per_thread(
// CHECK:         omp.wsloop {
// CHECK-NOT:     schedule
func.func @one_tile_per_thread(%m: memref<2xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (2) {
    memref.store %one, %m[%i] : memref<2xf32>
  }
  return
}

// -----

// Bounds known only at run time: left static.
// CHECK-LABEL: func.func @dynamic_bounds(
// CHECK:         omp.wsloop {
// CHECK-NOT:     schedule
func.func @dynamic_bounds(%m: memref<?xf32>, %n: index) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (%n) {
    memref.store %one, %m[%i] : memref<?xf32>
  }
  return
}

// -----

// A loop that names its schedule keeps it.
// CHECK-LABEL: func.func @keeps_a_named_schedule(
// CHECK:         omp.wsloop schedule(static) {
func.func @keeps_a_named_schedule(%m: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop schedule(static) {
      omp.loop_nest (%i) : index = (%c0) to (%c64) step (%c1) {
        memref.store %one, %m[%i] : memref<64xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
