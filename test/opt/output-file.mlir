// RUN: lowerline-opt %s -o %t | count 0
// RUN: FileCheck %s < %t
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(canonicalize)" -o %t
// RUN: FileCheck %s --check-prefix=CANON < %t

// With -o the output goes to the file, and nothing to stdout.
// CHECK-LABEL: func.func @written_to_output_file(
// CHECK:         arith.addi
// CANON-LABEL: func.func @written_to_output_file(
// CANON-NOT:     arith.addi
// CANON:         return %arg0
func.func @written_to_output_file(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %0 = arith.addi %a, %c0 : i32
  return %0 : i32
}
