// RUN: not lowerline-opt %s --split-input-file 2>&1 >/dev/null | FileCheck %s
// RUN: not lowerline-opt %s --split-input-file 2>/dev/null | FileCheck %s --check-prefix=OUT

// With --split-input-file, errors in later chunks are located by their line in the
// whole file, and every chunk is parsed, so every chunk's error is reported.
// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}parse-error-split.mlir:[[@LINE+19]]:21: error: expected ','{{$}}
// CHECK-NEXT: {{^}}{{.*}}parse-error-split.mlir:[[@LINE+31]]:10: error: use of undeclared SSA value name{{$}}
// CHECK-NOT: {{.}}

// Like mlir-opt, the chunks that succeeded are still printed.
// OUT:      func.func @first_chunk_is_fine
// OUT:      // -----
// OUT-NEXT: module {
// OUT-NEXT:   func.func @third_chunk_is_fine
// OUT-NOT:  func.func

func.func @first_chunk_is_fine() {
  return
}

// -----

// A malformed op in the second chunk.
func.func @second_chunk(%x: i32) -> i32 {
  %0 = arith.addi %x : i32
  return %0 : i32
}

// -----

func.func @third_chunk_is_fine() {
  return
}

// -----

func.func @fourth_chunk() -> i32 {
  return %undefined : i32
}
