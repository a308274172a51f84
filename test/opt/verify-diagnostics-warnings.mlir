// RUN: lowerline-opt %s --pass-pipeline="builtin.module(transform-dialect-check-uses)" \
// RUN:   --verify-diagnostics

// A pass's warning and its notes on other lines (transform-dialect-check-uses: handle used after free).
module attributes {transform.with_named_sequence} {
  transform.named_sequence @use_after_free(%root: !transform.any_op) {
    // expected-note @below {{allocated here}}
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-note @below {{freed here}}
    %g = transform.apply_registered_pass "canonicalize" to %f : (!transform.any_op) -> !transform.any_op
    // expected-warning @below {{operand #0 may be used after free}}
    transform.debug.emit_remark_at %f, "too late" : !transform.any_op
    transform.yield
  }
}
