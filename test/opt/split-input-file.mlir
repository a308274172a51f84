// RUN: lowerline-opt %s --split-input-file --pass-pipeline="builtin.module(canonicalize)" \
// RUN:   | FileCheck %s
// Without the flag the file is one module: the two @same_name functions clash.
// RUN: not lowerline-opt %s 2>&1 | FileCheck %s --check-prefix=WHOLE

// Each chunk is parsed, run and printed as its own module, the chunks separated by "// -----".
// CHECK:       module {
// CHECK-LABEL:   func.func @same_name(
// CHECK-SAME:        -> i32
// CHECK:           %[[C:.+]] = arith.constant 1 : i32
// CHECK:           return %[[C]] : i32
// CHECK:       {{^}}}
// CHECK-NEXT:  {{^}}// -----{{$}}
// CHECK-NEXT:  module {
// CHECK-LABEL:   func.func @same_name(
// CHECK-SAME:        -> i64
// CHECK:           %[[C:.+]] = arith.constant 2 : i64
// CHECK:           return %[[C]] : i64
// CHECK:       {{^}}}
// CHECK-NEXT:  {{^}}// -----{{$}}
// CHECK-NEXT:  module {
// CHECK-LABEL:   func.func @third_chunk(
// CHECK-NOT:   // -----

// WHOLE-NOT: Traceback
// WHOLE: split-input-file.mlir:[[@LINE+10]]:1: error: redefinition of symbol named 'same_name'
// WHOLE: split-input-file.mlir:[[@LINE+2]]:1: note: see existing symbol definition here

func.func @same_name() -> i32 {
  %0 = arith.constant 1 : i32
  return %0 : i32
}

// -----

func.func @same_name() -> i64 {
  %0 = arith.constant 2 : i64
  return %0 : i64
}

// -----

func.func @third_chunk() {
  return
}
