// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(canonicalize{no-such-option=1})" \
// RUN:   2>&1 | FileCheck %s --check-prefix=UPSTREAM-NAME
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(cse,canonicalize{max-iterations=many})" \
// RUN:   2>&1 | FileCheck %s --check-prefix=UPSTREAM-VALUE
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-widen-i1-memrefs{level=2}))" \
// RUN:   2>&1 | FileCheck %s --check-prefix=PASS-NAME
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm{widen-i1=maybe})" \
// RUN:   2>&1 | FileCheck %s --check-prefix=PIPELINE-VALUE
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm{widen-i8=true})" \
// RUN:   2>&1 | FileCheck %s --check-prefix=PIPELINE-NAME
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-graph{widen-i1=false})" \
// RUN:   2>&1 | FileCheck %s --check-prefix=NOT-READ
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-loops{parallel=cuda})" \
// RUN:   2>&1 | FileCheck %s --check-prefix=ENUM
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-loops{target=zzz})" \
// RUN:   2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not lowerline-opt %s --pass-pipeline='builtin.module(cse,lowerline-tile-and-fuse{target="x}y"})' \
// RUN:   2>&1 | FileCheck %s --check-prefix=PASS-TARGET
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-tiled{target=sm_12})" \
// RUN:   2>&1 | FileCheck %s --check-prefix=GPU-TARGET

// Values are checked when the pipeline is parsed, before any pass runs: enums
// list what they accept, targets must be known, and the error points into
// the pipeline text, not at the input file.
// ENUM:        {{^}}lowerline-opt: <pass-pipeline>:1:16: error: option 'parallel' of 'lowerline-to-loops': 'cuda' is not one of openmp, async{{$}}
// ENUM-NOT:    {{.}}
// TARGET:      {{^}}lowerline-opt: <pass-pipeline>:1:16: error: option 'target' of 'lowerline-to-loops': unknown CPU target 'zzz'; targets: cpu, cpu:sapphirerapids, cpu:znver4, cpu:haswell, cpu:cortex-a72, cpu:cortex-a76, cpu:neoverse-n1{{$}}
// TARGET-NOT:  {{.}}
// PASS-TARGET: {{^}}lowerline-opt: <pass-pipeline>:1:20: error: option 'target' of 'lowerline-tile-and-fuse': unknown CPU target 'x}y'
// GPU-TARGET:  {{^}}lowerline-opt: <pass-pipeline>:1:16: error: option 'target' of 'lowerline-gpu-to-tiled': unknown GPU target 'sm_12'

// A bad option is one error line at the pass's column, naming the pass and what is
// wrong: an unknown option or a bad value, of an upstream pass, a lowerline pass,
// or a lowerline pipeline (which accepts only the options it reads).
// UPSTREAM-NAME-NOT:  Traceback
// UPSTREAM-NAME:      {{^}}lowerline-opt: <pass-pipeline>:1:16: error: invalid options 'no-such-option=1' for pass 'canonicalize': no such option no-such-option{{$}}
// UPSTREAM-NAME-NOT:  {{.}}
// UPSTREAM-VALUE-NOT: Traceback
// UPSTREAM-VALUE:     {{^}}lowerline-opt: <pass-pipeline>:1:20: error: invalid options 'max-iterations=many' for pass 'canonicalize': for the --max-iterations option: 'many' value invalid for long argument!{{$}}
// UPSTREAM-VALUE-NOT: {{.}}
// PASS-NAME-NOT:      Traceback
// PASS-NAME:          {{^}}lowerline-opt: <pass-pipeline>:1:26: error: 'lowerline-widen-i1-memrefs' has no option 'level' (its options: none){{$}}
// PASS-NAME-NOT:      {{.}}
// PIPELINE-VALUE-NOT: Traceback
// PIPELINE-VALUE:     {{^}}lowerline-opt: <pass-pipeline>:1:16: error: option 'widen-i1' of 'lowerline-to-llvm' expects bool, got 'maybe'{{$}}
// PIPELINE-VALUE-NOT: {{.}}
// PIPELINE-NAME-NOT:  Traceback
// PIPELINE-NAME:      {{^}}lowerline-opt: <pass-pipeline>:1:16: error: 'lowerline-to-llvm' has no option 'widen-i8' (its options: approximate-math, widen-i1){{$}}
// PIPELINE-NAME-NOT:  {{.}}
// NOT-READ-NOT:       Traceback
// NOT-READ:           {{^}}lowerline-opt: <pass-pipeline>:1:16: error: 'lowerline-to-graph' has no option 'widen-i1' (its options: none){{$}}
// NOT-READ-NOT:       {{.}}
func.func @never_run() {
  return
}
