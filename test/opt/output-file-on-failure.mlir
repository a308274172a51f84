// A failed run writes nothing to the output file: no file when there was none ...
// RUN: rm -f %t
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-widen-i1-memrefs))" -o %t
// RUN: not test -e %t
// ... and the previous content when there was one.
// RUN: echo "previous content" > %t
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-widen-i1-memrefs))" -o %t
// RUN: FileCheck %s --check-prefix=KEPT < %t
// ... and no temporary file is left next to it.
// RUN: rm -rf %t.dir && mkdir %t.dir
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-widen-i1-memrefs))" -o %t.dir/out.mlir
// RUN: ls -A %t.dir | count 0

// KEPT:     {{^}}previous content{{$}}
// KEPT-NOT: {{.}}

// The first function is fine, the second fails the pass, so the run fails.
func.func @first_is_fine() {
  return
}
func.func @second_fails(%m: memref<4xi1>) {
  return
}
