// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(cse,func.func(canonicalize)" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNCLOSED
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(cse))" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=EXTRA-PAREN
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(canonicalize{max-iterations=2)" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNCLOSED-BRACE
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(cse,,canonicalize)" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=EMPTY-ELEMENT
// RUN: not lowerline-opt %s --pass-pipeline="cse,canonicalize" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-ANCHOR

// A malformed pipeline is one error line pointing at the column of the fault.
// UNCLOSED-NOT:       Traceback
// UNCLOSED:           {{^}}lowerline-opt: <pass-pipeline>:1:43: error: expected ')' to close 'builtin.module(', found end of pipeline{{$}}
// UNCLOSED-NOT:       {{.}}
// EXTRA-PAREN-NOT:    Traceback
// EXTRA-PAREN:        {{^}}lowerline-opt: <pass-pipeline>:1:20: error: unexpected text after the pipeline{{$}}
// EXTRA-PAREN-NOT:    {{.}}
// UNCLOSED-BRACE-NOT: Traceback
// UNCLOSED-BRACE:     {{^}}lowerline-opt: <pass-pipeline>:1:28: error: unbalanced '{' in pass options{{$}}
// UNCLOSED-BRACE-NOT: {{.}}
// EMPTY-ELEMENT-NOT:  Traceback
// EMPTY-ELEMENT:      {{^}}lowerline-opt: <pass-pipeline>:1:20: error: expected a pass or anchor name, found ','{{$}}
// EMPTY-ELEMENT-NOT:  {{.}}
// NO-ANCHOR-NOT:      Traceback
// NO-ANCHOR:          {{^}}lowerline-opt: <pass-pipeline>:1:1: error: expected the pipeline to be wrapped in its anchor op, e.g. 'builtin.module(...)'{{$}}
// NO-ANCHOR-NOT:      {{.}}
func.func @never_run() {
  return
}
