// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(scf-forall-to-parallel),convert-scf-to-openmp{num-threads=2},lowerline-omp-loop-nowait)" \
// RUN:   --split-input-file | FileCheck %s

// A parallel loop nest becomes a region with one loop: the region's join
// barrier follows the loop, which needs none of its own.
// CHECK-LABEL: func.func @loop_ends_its_region(
// CHECK:         omp.parallel
// CHECK-NEXT:      omp.wsloop nowait {
// CHECK:           omp.terminator
func.func @loop_ends_its_region(%m: memref<8x7xf32>) {
  %one = arith.constant 1.0 : f32
  scf.forall (%i, %j) in (8, 7) {
    memref.store %one, %m[%i, %j] : memref<8x7xf32>
  }
  return
}

// -----

// Work after the loop in the same region reads what the loop wrote: the
// first loop keeps its barrier, the last one drops it.
// CHECK-LABEL: func.func @loop_then_more_work(
// CHECK:         omp.parallel {
// CHECK-NEXT:      omp.wsloop {
// CHECK:           omp.wsloop nowait {
// CHECK:           omp.terminator
func.func @loop_then_more_work(%m: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c64) step (%c1) {
        memref.store %one, %m[%i] : memref<64xf32>
        omp.yield
      }
    }
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c64) step (%c1) {
        %x = memref.load %m[%i] : memref<64xf32>
        %y = arith.addf %x, %x : f32
        memref.store %y, %m[%i] : memref<64xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// A reduction's result is read after the loop's barrier: the barrier stays.
// CHECK-LABEL: func.func @reduction_keeps_its_barrier(
// CHECK:         omp.wsloop reduction(
// CHECK-NOT:     nowait
func.func @reduction_keeps_its_barrier(%m: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.parallel (%i) = (%c0) to (%c64) step (%c1) init (%zero) -> f32 {
    %x = memref.load %m[%i] : memref<64xf32>
    scf.reduce(%x : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  }
  return %sum : f32
}
