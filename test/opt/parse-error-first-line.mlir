// RUN: not lowerline-opt %S/Inputs/error-on-line-1.mlir 2>&1 | FileCheck %s
// RUN: not lowerline-opt < %S/Inputs/error-on-line-1.mlir 2>&1 | FileCheck %s --check-prefix=STDIN
// RUN: not lowerline-opt %S/Inputs/error-on-line-1.mlir --split-input-file 2>&1 \
// RUN:   | FileCheck %s

// An error on the first line of the input (Inputs/error-on-line-1.mlir starts
// with "func.func @broken( {") has the column of the token in that line, with or
// without --split-input-file, from a file or from stdin.
// CHECK-NOT:  Traceback
// CHECK:      {{^}}{{.*}}Inputs{{/|\\}}error-on-line-1.mlir:1:19: error: expected non-function type{{$}}
// CHECK-NOT:  {{.}}
// STDIN-NOT:  Traceback
// STDIN:      {{^}}<stdin>:1:19: error: expected non-function type{{$}}
// STDIN-NOT:  {{.}}
