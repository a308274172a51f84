// RUN: not lowerline-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(canonicalize,finalize-memref-to-llvm,convert-func-to-llvm)" \
// RUN:   -o %t 2>&1 | FileCheck %s
// RUN: not test -e %t

// Upstream aborts (LLVM assertions) kill the driver's forked child, never the
// driver: exit status 1 and an error at the first line of the chunk that was
// being processed, naming the pass (issue 20; both found by
// python/tests/test_fuzz_mutations.py). The chunks after it are not run.

// finalize-memref-to-llvm asserts on a store of i1 (element width < 8).
// CHECK-NOT: Traceback
// CHECK:     crash-isolated.mlir:[[@LINE+1]]:1: error: lowerline-opt crashed (SIGABRT) in pass 'finalize-memref-to-llvm', on the input starting here
func.func @i1_store(%m: memref<4xi1>, %v: i1) {
  %c0 = arith.constant 0 : index
  memref.store %v, %m[%c0] : memref<4xi1>
  return
}

// -----

// Never reached: the run stopped at the crash above.
// CHECK-NOT: error
func.func @not_reached(%x: f32) -> f32 {
  return %x : f32
}
