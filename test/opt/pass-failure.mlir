// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-widen-i1-memrefs))" \
// RUN:   2>&1 | FileCheck %s

// A pass that fails makes the run fail: its error is printed at the op's location,
// and the IR is not printed.
// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}pass-failure.mlir:[[@LINE+2]]:1: error: function signature has i1 memrefs; run lowerline-widen-i1-memrefs on the enclosing builtin.module to widen it{{$}}
// CHECK-NOT: {{.}}
func.func @signature_with_i1_memref(%m: memref<4xi1>) {
  return
}
