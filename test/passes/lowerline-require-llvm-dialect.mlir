// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-require-llvm-dialect)" \
// RUN:   --split-input-file | FileCheck %s

// A module that is all LLVM dialect passes unchanged.
// CHECK-LABEL: llvm.func @all_llvm(
// CHECK:         llvm.fadd
// CHECK:         llvm.return
llvm.func @all_llvm(%a: f32) -> f32 {
  %s = llvm.fadd %a, %a : f32
  llvm.return %s : f32
}

// -----

// OpenMP ops on LLVM types are translated as they are: allowed.
// CHECK-LABEL: llvm.func @openmp_is_allowed(
// CHECK:         omp.parallel
llvm.func @openmp_is_allowed() {
  omp.parallel {
    omp.terminator
  }
  llvm.return
}
