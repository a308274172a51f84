// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(func.func(cse,lowerline-to-llvm))" \
// RUN:   2>&1 | FileCheck %s --check-prefix=LOWERLINE
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(func.func(finalize-memref-to-llvm))" \
// RUN:   2>&1 | FileCheck %s --check-prefix=UPSTREAM
// RUN: not lowerline-opt %s --pass-pipeline="func.func(lowerline-widen-i1-memrefs)" \
// RUN:   2>&1 | FileCheck %s --check-prefix=ROOT

// A lowerline pipeline nested under an op it does not run on is one error line
// at its column, as is an upstream module pass nested in func.func, and a
// pipeline whose root anchor is not the input's top-level builtin.module.
// LOWERLINE-NOT: Traceback
// LOWERLINE:     {{^}}lowerline-opt: <pass-pipeline>:1:30: error: pipeline 'lowerline-to-llvm' runs on 'builtin.module' ops, not 'func.func'{{$}}
// LOWERLINE-NOT: {{.}}
// UPSTREAM-NOT:  Traceback
// UPSTREAM:      {{^}}lowerline-opt: <pass-pipeline>:1:26: error: 'finalize-memref-to-llvm' cannot run on 'func.func': {{.*}}restricted to 'builtin.module'{{.*}}{{$}}
// UPSTREAM-NOT:  {{.}}
// ROOT-NOT:      Traceback
// ROOT:          {{^}}lowerline-opt: <pass-pipeline>:1:1: error: the pipeline is anchored on 'func.func', but the top-level op of the input is 'builtin.module'{{$}}
// ROOT-NOT:      {{.}}
func.func @never_run() {
  return
}
