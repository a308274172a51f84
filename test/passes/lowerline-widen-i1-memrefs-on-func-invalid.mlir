// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-widen-i1-memrefs))" \
// RUN:   --split-input-file --verify-diagnostics

// A signature with an i1 memref can only change together with its callers.
// expected-error @below {{function signature has i1 memrefs; run lowerline-widen-i1-memrefs on the enclosing builtin.module to widen it}}
func.func @rejects_i1_memref_signature(%m: memref<4xi1>) {
  return
}

// -----

// A call passing an i1 memref would change the callee's signature (callee second: the run stops at the first failure).
func.func @rejects_call_with_i1_memref() {
  %m = memref.alloc() : memref<4xi1>
  // expected-error @below {{'func.call' with i1 memrefs needs lowerline-widen-i1-memrefs on the builtin.module}}
  func.call @callee(%m) : (memref<4xi1>) -> ()
  return
}
func.func private @callee(memref<4xi1>)

// -----

// A get_global of an i1 global would change the module-level global.
memref.global "private" @flags : memref<4xi1> = uninitialized
func.func @rejects_get_global_of_i1() {
  // expected-error @below {{'memref.get_global' with i1 memrefs needs lowerline-widen-i1-memrefs on the builtin.module}}
  %g = memref.get_global @flags : memref<4xi1>
  return
}
