// RUN: not lowerline-opt %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=INPUT
// RUN: rm -rf %t.dir
// RUN: not lowerline-opt %s -o %t.dir/no/such/dir/out.mlir 2>&1 | FileCheck %s --check-prefix=OUTPUT

// An input file that cannot be read, or an output file that cannot be written, is
// one error line naming the file.
// INPUT-NOT:  Traceback
// INPUT:      {{^}}lowerline-opt: error: cannot open input file '{{.*}}.does-not-exist.mlir': No such file or directory{{$}}
// INPUT-NOT:  {{.}}
// OUTPUT-NOT: Traceback
// OUTPUT:     {{^}}lowerline-opt: error: cannot write output file '{{.*}}out.mlir': No such file or directory{{$}}
// OUTPUT-NOT: {{.}}
func.func @never_written() {
  return
}
