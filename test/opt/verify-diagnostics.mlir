// RUN: lowerline-opt %s --split-input-file --verify-diagnostics

// An expected-error on the line of the diagnostic itself.
func.func @same_line() -> i32 {
  return // expected-error {{'func.return' op has 0 operands, but enclosing function (@same_line) returns 1}}
}

// -----

// @below: the diagnostic is on the next line.
func.func @at_below() -> i32 {
  // expected-error @below {{'func.return' op has 0 operands}}
  return
}

// -----

// @above: the diagnostic is on the previous line.
func.func @at_above() -> i32 {
  return
  // expected-error @above {{'func.return' op has 0 operands}}
}

// -----

// @+N and @-N: N lines after / before the annotation; the error and its note each on its own line.
func.func @at_plus_and_minus_n(%x: i32) -> i64 {
  %0 = arith.addi %x, %x : i32
  // expected-note @-1 {{prior use here}}
  // expected-error @+2 {{use of value '%0' expects different type than prior uses: 'i64' vs 'i32'}}

  return %0 : i64
}

// -----

// A verifier error with a note on another line (the symbol's first definition).
// expected-note @+1 {{see existing symbol definition here}}
func.func @twice() {
  return
}
// expected-error @+1 {{redefinition of symbol named 'twice'}}
func.func @twice() {
  return
}

// -----

// A chunk without diagnostics and without annotations verifies as well.
func.func @no_diagnostics() {
  return
}
