// RUN: lowerline-opt %s -o /dev/null --mlir-print-ir-after=cse \
// RUN:   --pass-pipeline="builtin.module(canonicalize,lowerline-widen-i1-memrefs,cse)" \
// RUN:   2>&1 | FileCheck %s --check-prefix=UPSTREAM
// RUN: lowerline-opt %s -o /dev/null --mlir-print-ir-after=lowerline-widen-i1-memrefs \
// RUN:   --pass-pipeline="builtin.module(func.func(canonicalize,lowerline-widen-i1-memrefs),cse)" \
// RUN:   2>&1 | FileCheck %s --check-prefix=LOWERLINE
// RUN: lowerline-opt %s -o /dev/null --mlir-print-ir-after=canonicalize \
// RUN:   --pass-pipeline="builtin.module(canonicalize{max-iterations=2},cse)" \
// RUN:   2>&1 | FileCheck %s --check-prefix=WITH-OPTIONS
// RUN: not lowerline-opt %s --mlir-print-ir-after=canonicalise \
// RUN:   --pass-pipeline="builtin.module(func.func(canonicalize),cse)" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN

// A name that matches no pass of the pipeline is an error, as in mlir-opt.
// UNKNOWN: lowerline-opt: error: --mlir-print-ir-after: no pass 'canonicalise' in the pipeline (its passes: canonicalize, cse)
// UNKNOWN-NOT: Traceback

// --mlir-print-ir-after=PASS prints the IR after that pass only.
// UPSTREAM-NOT:  IR Dump After canonicalize
// UPSTREAM-NOT:  IR Dump After lowerline-widen-i1-memrefs
// UPSTREAM:      // -----// IR Dump After cse ('builtin.module' operation) //----- //
// UPSTREAM:        func.func @print_one_pass(
// UPSTREAM-NOT:  IR Dump After

// A lowerline pass nested in func.func is printed once per function.
// LOWERLINE-NOT: IR Dump After canonicalize
// LOWERLINE:     // -----// IR Dump After lowerline-widen-i1-memrefs ('func.func' operation: @print_one_pass) //----- //
// LOWERLINE-NEXT: func.func @print_one_pass(
// LOWERLINE:       memref.alloca() : memref<4xi8>
// LOWERLINE-NOT: IR Dump After cse
// LOWERLINE-NOT: IR Dump After

// A pass given with options is still named by its name alone.
// WITH-OPTIONS:     // -----// IR Dump After canonicalize{max-iterations=2} ('builtin.module' operation) //----- //
// WITH-OPTIONS-NOT: IR Dump After
func.func @print_one_pass(%i: index) -> i1 {
  %m = memref.alloca() : memref<4xi1>
  %v = memref.load %m[%i] : memref<4xi1>
  return %v : i1
}
