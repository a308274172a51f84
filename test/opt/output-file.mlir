// RUN: lowerline-opt %s -o %t | count 0
// RUN: FileCheck %s < %t
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(canonicalize)" -o %t
// RUN: FileCheck %s --check-prefix=CANON < %t
// A new file gets the mode `open` gives (not mkstemp's 0600); an existing one
// keeps its mode; through a link, the target is written and the link stays.
// RUN: rm -rf %t.d && mkdir %t.d && cd %t.d && umask 022
// RUN: lowerline-opt %s -o new.mlir && stat -c %%a new.mlir | FileCheck %s --check-prefix=NEW
// RUN: touch kept.mlir && chmod 640 kept.mlir && ln -s kept.mlir link.mlir
// RUN: lowerline-opt %s -o link.mlir && test -L link.mlir
// RUN: stat -c %%a kept.mlir | FileCheck %s --check-prefix=KEPT
// RUN: FileCheck %s < kept.mlir
// NEW: {{^}}644{{$}}
// KEPT: {{^}}640{{$}}

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
