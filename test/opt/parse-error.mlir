// RUN: not lowerline-opt %s 2>&1 | FileCheck %s

// Malformed IR fails the run with the parser's error, located file:line:col at the
// offending token, and prints nothing else (no IR, no Python traceback).
// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}parse-error.mlir:[[@LINE+6]]:21: error: expected ','{{$}}
// CHECK-NOT: {{.}}
func.func @fine() {
  return
}
func.func @malformed(%x: i32) -> i32 {
  %0 = arith.addi %x : i32
  return %0 : i32
}
