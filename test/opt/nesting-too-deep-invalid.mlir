// Input and pipelines nested too deeply for the parsers' recursion are refused
// with a located error and exit status 1 (3000 nested regions, or 100k
// parentheses, used to crash lowerline-opt with SIGSEGV). Deep pipelines:
// python/tests/test_pipeline_parser.py.
// RUN: %PYTHON -c "print('func.func @f() {'); print('\"test.op\"() ({' * 3000); print('}) : () -> ()' * 3000); print('return }')" > %t.regions.mlir
// RUN: not lowerline-opt --allow-unregistered-dialect %t.regions.mlir 2>&1 | FileCheck %s --check-prefix=REGIONS
// RUN: %PYTHON -c "print('(' * 100000)" > %t.parens.mlir
// RUN: not lowerline-opt %t.parens.mlir 2>&1 | FileCheck %s --check-prefix=PARENS
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(cse))" | FileCheck %s --check-prefix=SHALLOW

// REGIONS:  regions.mlir:2:{{[0-9]+}}: error: brackets nested deeper than 1000 levels: refused before parsing
// PARENS:   parens.mlir:1:1001: error: brackets nested deeper than 1000 levels: refused before parsing
// SHALLOW:  func.func @shallow_input_parses
func.func @shallow_input_parses() {
  return
}
