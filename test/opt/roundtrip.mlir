// RUN: lowerline-opt %s | FileCheck %s

// With no pipeline the driver parses and prints, like mlir-opt.
// CHECK-LABEL: func.func @add
// CHECK:         arith.addf
func.func @add(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}
