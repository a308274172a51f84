// RUN: not lowerline-opt %s --split-input-file --verify-diagnostics 2>&1 | FileCheck %s

// Each way --verify-diagnostics can fail fails the run, with one located complaint per problem.
// CHECK-NOT: Traceback

// An expected diagnostic that is not produced.
// CHECK: verify-diagnostics-failures.mlir:[[@LINE+2]]: error: expected error "this error never happens" was not produced
func.func @expected_error_not_produced() {
  // expected-error @below {{this error never happens}}
  return
}

// -----

// A diagnostic that no annotation expects.
// CHECK: verify-diagnostics-failures.mlir:[[@LINE+2]]:3: error: unexpected error: 'func.return' op has 0 operands, but enclosing function (@unexpected_error) returns 1
func.func @unexpected_error() -> i32 {
  return
}

// -----

// An annotation on the wrong line: an unexpected error and an unmet annotation.
// CHECK: verify-diagnostics-failures.mlir:[[@LINE+4]]:3: error: unexpected error: 'func.return' op has 0 operands
// CHECK: verify-diagnostics-failures.mlir:[[@LINE+2]]: error: expected error "'func.return' op has 0 operands" was not produced
func.func @annotation_on_wrong_line() -> i32 {
  // expected-error @+2 {{'func.return' op has 0 operands}}
  return
}

// -----

// The right line but the wrong severity.
// CHECK: verify-diagnostics-failures.mlir:[[@LINE+4]]:3: error: unexpected error: 'func.return' op has 0 operands
// CHECK: verify-diagnostics-failures.mlir:[[@LINE+2]]: error: expected warning "'func.return' op has 0 operands" was not produced
func.func @wrong_severity() -> i32 {
  // expected-warning @below {{'func.return' op has 0 operands}}
  return
}

// -----

// An expected note whose error is produced but not the note.
// CHECK: verify-diagnostics-failures.mlir:[[@LINE+3]]: error: expected note "no such note" was not produced
func.func @expected_note_not_produced() -> i32 {
  // expected-error @below {{'func.return' op has 0 operands}}
  // expected-note @below {{no such note}}
  return
}

// -----

// A chunk that verifies cleanly adds no complaint (and does not make the run pass).
func.func @verifies_cleanly() -> i32 {
  // expected-error @below {{'func.return' op has 0 operands}}
  return
}
// CHECK-NOT: error:
