// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(canonicalize,no-such-pass)" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOP
// RUN: not lowerline-opt %s \
// RUN:   --pass-pipeline="builtin.module(func.func(canonicalize,lowerline-widen-i1-memrefs,cse,no-such-pass{x=1}))" \
// RUN:   2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-widen-i1-memref)" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TYPO

// An unknown pass is one error line naming the pass and its column in the
// pipeline, whether at the top or nested next to lowerline passes.
// TOP-NOT:    Traceback
// TOP:        {{^}}lowerline-opt: <pass-pipeline>:1:29: error: unknown pass or pipeline 'no-such-pass'{{$}}
// TOP-NOT:    {{.}}
// NESTED-NOT: Traceback
// NESTED:     {{^}}lowerline-opt: <pass-pipeline>:1:70: error: unknown pass or pipeline 'no-such-pass'{{$}}
// NESTED-NOT: {{.}}
// TYPO-NOT:   Traceback
// TYPO:       {{^}}lowerline-opt: <pass-pipeline>:1:16: error: unknown pass or pipeline 'lowerline-widen-i1-memref'{{$}}
// TYPO-NOT:   {{.}}
func.func @never_run() {
  return
}
