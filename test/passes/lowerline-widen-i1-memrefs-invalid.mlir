// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-widen-i1-memrefs)" \
// RUN:   --split-input-file --verify-diagnostics

// An atomic read-modify-write on bits cannot be turned into one on bytes.
func.func @rejects_atomic_rmw(%m: memref<4xi1>, %b: i1, %i: index) -> i1 {
  // expected-error @below {{'memref.atomic_rmw' on an i1 memref is not supported by lowerline-widen-i1-memrefs}}
  %r = memref.atomic_rmw ori %b, %m[%i] : (i1, memref<4xi1>) -> i1
  return %r : i1
}

// -----

// A linalg op on an i1 buffer is rejected: its payload would compute on bytes.
func.func @rejects_linalg_fill(%b: i1) {
  %m = memref.alloc() : memref<4xi1>
  // expected-error @below {{'linalg.fill' on an i1 memref is not supported}}
  linalg.fill ins(%b : i1) outs(%m : memref<4xi1>)
  memref.dealloc %m : memref<4xi1>
  return
}

// -----

// Every unsupported op is reported, not only the first one.
func.func @reports_every_unsupported_op(%m: memref<4x4xi1>, %b: i1) {
  // expected-error @below {{'linalg.fill' on an i1 memref}}
  linalg.fill ins(%b : i1) outs(%m : memref<4x4xi1>)
  %t = memref.alloc() : memref<4x4xi1>
  // expected-error @below {{'linalg.transpose' on an i1 memref}}
  linalg.transpose ins(%m : memref<4x4xi1>) outs(%t : memref<4x4xi1>) permutation = [1, 0]
  return
}
