// RUN: lowerline-opt %s -o /dev/null --mlir-timing \
// RUN:   --pass-pipeline="builtin.module(func.func(canonicalize,cse),lowerline-widen-i1-memrefs,cse)" \
// RUN:   2>&1 | FileCheck %s

// --mlir-timing reports the wall time of every pass of the pipeline, upstream and
// lowerline ones, a nested pass apart from the same pass on the module.
// CHECK:      ... Execution time report ...
// CHECK:      Total Execution Time: {{[0-9.]+}} seconds
// CHECK:      ----Wall Time----  ----Name----
// CHECK-DAG:  {{[0-9.]+}} ({{ *[0-9.]+}}%)  func.func(canonicalize){{$}}
// CHECK-DAG:  {{[0-9.]+}} ({{ *[0-9.]+}}%)  func.func(cse){{$}}
// CHECK-DAG:  {{[0-9.]+}} ({{ *[0-9.]+}}%)  lowerline-widen-i1-memrefs{{$}}
// CHECK-DAG:  {{[0-9.]+}} ({{ *[0-9.]+}}%)  cse{{$}}
// CHECK:      {{[0-9.]+}} (100.0%)  Total
func.func @timed(%i: index) -> i1 {
  %m = memref.alloca() : memref<4xi1>
  %v = memref.load %m[%i] : memref<4xi1>
  return %v : i1
}
