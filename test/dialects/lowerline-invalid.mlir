// RUN: lowerline-opt %s --split-input-file --verify-diagnostics

// The IRDL verifier of lowerline's dialect (dialects/lowerline.irdl.mlir)
// rejects bad parameters, attributes and operands as the IR is parsed.

// A scale that is not a float.
func.func @rejects_a_string_scale(%x: tensor<4xf32>) -> tensor<4xi8> {
  // expected-error @below {{expected base attribute 'builtin.float' but got 'builtin.string'}}
  %q = "lowerline.quantize"(%x) {params = #lowerline.per_tensor<"half", 3 : i64>} : (tensor<4xf32>) -> tensor<4xi8>
  return %q : tensor<4xi8>
}

// -----

// A zero point that is not an integer.
func.func @rejects_a_float_zero_point(%x: tensor<4xi8>) -> tensor<4xf32> {
  // expected-error @below {{expected base attribute 'builtin.integer' but got 'builtin.float'}}
  %d = "lowerline.dequantize"(%x) {params = #lowerline.per_tensor<0.5 : f32, 3.0 : f32>} : (tensor<4xi8>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// params must be a #lowerline.per_tensor, not a bare number.
func.func @rejects_params_of_another_attribute(%x: tensor<4xf32>) -> tensor<4xi8> {
  // expected-error @below {{expected base attribute 'lowerline.per_tensor' but got 'builtin.integer'}}
  %q = "lowerline.quantize"(%x) {params = 3 : i64} : (tensor<4xf32>) -> tensor<4xi8>
  return %q : tensor<4xi8>
}

// -----

// params is required.
func.func @rejects_missing_params(%x: tensor<4xf32>) -> tensor<4xi8> {
  // expected-error @below {{'lowerline.quantize' op attribute "params" is expected but not provided}}
  %q = "lowerline.quantize"(%x) : (tensor<4xf32>) -> tensor<4xi8>
  return %q : tensor<4xi8>
}

// -----

// The ops work on tensors; a buffer is rejected.
func.func @rejects_a_memref_operand(%x: memref<4xf32>) -> tensor<4xi8> {
  // expected-error @below {{expected base type 'builtin.tensor' but got 'builtin.memref'}}
  %q = "lowerline.quantize"(%x) {params = #lowerline.per_tensor<0.5 : f32, 3 : i64>} : (memref<4xf32>) -> tensor<4xi8>
  return %q : tensor<4xi8>
}
