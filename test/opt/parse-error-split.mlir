// RUN: not lowerline-opt %s --split-input-file 2>&1 | FileCheck %s

// With --split-input-file, errors in later chunks are located by their line in the
// whole file, and every chunk is parsed, so every chunk's error is reported.
// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}parse-error-split.mlir:[[@LINE+12]]:21: error: expected ','{{$}}
// CHECK-NEXT: {{^}}{{.*}}parse-error-split.mlir:[[@LINE+24]]:10: error: use of undeclared SSA value name{{$}}
// CHECK-NOT: {{.}}

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
