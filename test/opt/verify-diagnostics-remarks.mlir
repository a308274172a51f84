// RUN: lowerline-opt %s --pass-pipeline="builtin.module(transform-interpreter)" \
// RUN:   --split-input-file --verify-diagnostics

// Remarks from a pass (transform.debug.emit_remark_at); stacked @below annotations skip each other.
module attributes {transform.with_named_sequence} {
  // expected-remark @below {{first remark}}
  // expected-remark @below {{second remark}}
  func.func @two_remarks_on_one_op() {
    return
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.debug.emit_remark_at %f, "first remark" : !transform.any_op
    transform.debug.emit_remark_at %f, "second remark" : !transform.any_op
    transform.yield
  }
}

// -----

// Stacked @above annotations skip each other; an expected message matches part of the remark.
module attributes {transform.with_named_sequence} {
  func.func @remark_above() {
    %c = arith.constant 0 : i32
    // expected-remark @above {{on the constant}}
    // expected-remark @above {{constant}}
    return
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op) {
    %c = transform.structured.match ops{["arith.constant"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.debug.emit_remark_at %c, "remark on the constant" : !transform.any_op
    transform.debug.emit_remark_at %c, "another remark on the constant" : !transform.any_op
    transform.yield
  }
}
