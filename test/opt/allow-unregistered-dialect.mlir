// RUN: not lowerline-opt %s 2>&1 | FileCheck %s --check-prefix=REJECTED
// RUN: lowerline-opt %s --allow-unregistered-dialect | FileCheck %s --check-prefix=ACCEPTED
// RUN: lowerline-opt %s --allow-unregistered-dialect --mlir-print-op-generic \
// RUN:   | FileCheck %s --check-prefix=GENERIC

// An op of an unknown dialect is an error, unless --allow-unregistered-dialect;
// --mlir-print-op-generic prints every op in the generic form.
// REJECTED-NOT: Traceback
// REJECTED:     {{^}}{{.*}}allow-unregistered-dialect.mlir:[[@LINE+10]]:17: error: operation being parsed with an unregistered dialect. If this is intended, please use -allow-unregistered-dialect{{.*}}{{$}}
// REJECTED-NOT: {{.}}
// ACCEPTED-LABEL: func.func @unregistered_op(
// ACCEPTED:         "mydialect.op"() : () -> ()
// ACCEPTED:         return
// GENERIC:      "builtin.module"() ({
// GENERIC:        "func.func"() <{function_type = () -> (), sym_name = "unregistered_op"}> ({
// GENERIC:          "mydialect.op"() : () -> ()
// GENERIC:          "func.return"() : () -> ()
func.func @unregistered_op() {
  "mydialect.op"() : () -> ()
  return
}
