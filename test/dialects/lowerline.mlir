// RUN: lowerline-opt %s --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --split-input-file --pass-pipeline="builtin.module(canonicalize,cse)" \
// RUN:   | FileCheck %s --check-prefix=PASSES

// lowerline's IRDL dialect (dialects/lowerline.irdl.mlir) is loaded into the
// driver's context: its ops and attribute parse, verify and print back in
// generic syntax.

// A QDQ pair: quantize to i8 and back, one per-tensor scale and zero point.
// CHECK-LABEL: func.func @parses_a_qdq_pair(
// CHECK:         %[[Q:.*]] = "lowerline.quantize"(%{{.*}}) {params = #lowerline.per_tensor<5.000000e-01 : f32, 3 : i64>} : (tensor<4xf32>) -> tensor<4xi8>
// CHECK:         "lowerline.dequantize"(%[[Q]]) {params = #lowerline.per_tensor<5.000000e-01 : f32, 3 : i64>} : (tensor<4xi8>) -> tensor<4xf32>
// Upstream passes run over the ops (IRDL ops have no side effects declared:
// they are kept).
// PASSES-LABEL: func.func @parses_a_qdq_pair(
// PASSES:         "lowerline.quantize"
// PASSES:         "lowerline.dequantize"
func.func @parses_a_qdq_pair(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = "lowerline.quantize"(%x) {params = #lowerline.per_tensor<0.5 : f32, 3 : i64>} : (tensor<4xf32>) -> tensor<4xi8>
  %d = "lowerline.dequantize"(%q) {params = #lowerline.per_tensor<0.5 : f32, 3 : i64>} : (tensor<4xi8>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// The parameters' widths are free: a bf16 scale, an unsigned 8-bit zero point.
// CHECK-LABEL: func.func @accepts_other_parameter_widths(
// CHECK:         #lowerline.per_tensor<2.500000e-01 : bf16, 128 : ui8>
func.func @accepts_other_parameter_widths(%x: tensor<2x3xbf16>) -> tensor<2x3xui8> {
  %q = "lowerline.quantize"(%x) {params = #lowerline.per_tensor<0.25 : bf16, 128 : ui8>} : (tensor<2x3xbf16>) -> tensor<2x3xui8>
  return %q : tensor<2x3xui8>
}
