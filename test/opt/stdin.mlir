// RUN: lowerline-opt < %s | FileCheck %s
// RUN: lowerline-opt - < %s | FileCheck %s
// RUN: lowerline-opt --mlir-print-debuginfo < %s | FileCheck %s --check-prefix=LOC

// Input read from stdin (no file argument, or "-") is parsed and printed.
// CHECK-LABEL: func.func @read_from_stdin(
// CHECK:         arith.muli
// LOC:         func.func @read_from_stdin(%arg0: i32 loc("<stdin>":[[@LINE+1]]:28))
func.func @read_from_stdin(%a: i32) -> i32 {
  %0 = arith.muli %a, %a : i32
  return %0 : i32
}
