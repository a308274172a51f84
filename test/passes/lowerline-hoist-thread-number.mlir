// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-hoist-thread-number))" \
// RUN:   --split-input-file | FileCheck %s

// The thread number read in the body of a worksharing loop (two reads, as
// two scratch slots of lowerline-plan-arena would make) becomes one read at
// the top of the parallel region; the loop body's alloca scope then holds
// no call (canonicalize can inline it).
// CHECK-LABEL: func.func @hoists_out_of_the_loop(
// CHECK:         omp.parallel {
// CHECK-NEXT:      %[[TID:.+]] = llvm.call @omp_get_thread_num() : () -> i32
// CHECK-NEXT:      omp.wsloop {
// CHECK:             memref.alloca_scope {
// CHECK-NOT:           llvm.call
// CHECK:               memref.store %[[TID]], %{{.+}}[%{{.+}}]
// CHECK-NOT:           llvm.call
// CHECK:               memref.store %[[TID]], %{{.+}}[%{{.+}}]
llvm.func @omp_get_thread_num() -> i32
func.func @hoists_out_of_the_loop(%m: memref<8xi32>, %n: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c8) step (%c1) {
        memref.alloca_scope {
          %t = llvm.call @omp_get_thread_num() : () -> i32
          memref.store %t, %m[%i] : memref<8xi32>
          %u = llvm.call @omp_get_thread_num() : () -> i32
          memref.store %u, %n[%i] : memref<8xi32>
        }
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// Left as they are: a read already outside the loop, a read outside any
// parallel region, and a call of another function in the loop.
// CHECK-LABEL: func.func @leaves_other_calls(
// CHECK:         llvm.call @omp_get_thread_num()
// CHECK-NEXT:    memref.store
// CHECK:         omp.parallel {
// CHECK-NEXT:      llvm.call @omp_get_thread_num()
// CHECK-NEXT:      omp.wsloop {
// CHECK:             memref.alloca_scope {
// CHECK-NEXT:          llvm.call @other()
llvm.func @omp_get_thread_num() -> i32
llvm.func @other() -> i32
func.func @leaves_other_calls(%m: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %s = llvm.call @omp_get_thread_num() : () -> i32
  memref.store %s, %m[%c0] : memref<8xi32>
  omp.parallel {
    %t = llvm.call @omp_get_thread_num() : () -> i32
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c8) step (%c1) {
        memref.alloca_scope {
          %o = llvm.call @other() : () -> i32
          %sum = arith.addi %o, %t : i32
          memref.store %sum, %m[%i] : memref<8xi32>
        }
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
