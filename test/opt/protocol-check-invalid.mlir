// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-approximate-exp))" \
// RUN:   --split-input-file --verify-diagnostics
// RUN: env LOWERLINE_CHECK_PROTOCOL=0 lowerline-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(lowerline-approximate-exp))" | FileCheck %s

// lit.cfg.py sets LOWERLINE_CHECK_PROTOCOL=1: after every lowerline pass
// (here one that leaves these ops alone) each lowerline.* attribute is
// checked against lowerline.pipeline.protocol. Off (the default outside the
// test suites), the same IR goes through untouched: the CHECK lines.

// A misspelt attribute name on an upstream op (IRDL cannot see this one).
// CHECK-LABEL: func.func @rejects_a_misspelt_name(
// CHECK:         linalg.matmul {lowerline.contrac}
func.func @rejects_a_misspelt_name(%a: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @below {{protocol check after lowerline-approximate-exp: unknown lowerline attribute 'lowerline.contrac' (did you mean 'lowerline.contract'?)}}
  %0 = linalg.matmul {lowerline.contrac} ins(%a, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// A value of the wrong attribute type: vector sizes as an ArrayAttr.
// CHECK-LABEL: func.func @rejects_a_mistyped_value(
func.func @rejects_a_mistyped_value(%a: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @below {{'lowerline.vector_sizes' must be an i64 array (array<i64: ...>), not [4, 4, 1]}}
  %0 = linalg.matmul {lowerline.vector_sizes = [4, 4, 1]} ins(%a, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// A declared attribute on an op that may not carry it.
// CHECK-LABEL: func.func @rejects_a_wrong_carrier(
// expected-error @below {{'lowerline.vector_sizes' may sit on linalg.* only, not on func.func}}
func.func @rejects_a_wrong_carrier() attributes {lowerline.vector_sizes = array<i64: 4>} {
  return
}

// -----

// Declared attributes of the right types on the right ops pass.
// CHECK-LABEL: func.func @accepts_the_protocol(
func.func @accepts_the_protocol(%a: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32>
    attributes {lowerline.num_results = 1 : i64} {
  %0 = linalg.matmul {lowerline.vector_sizes = array<i64: 4, 4, 1>, lowerline.contract} ins(%a, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
