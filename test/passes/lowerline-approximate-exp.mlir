// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-approximate-exp)" \
// RUN:   --split-input-file | FileCheck %s

// A vector exp becomes range reduction, a polynomial and two exact powers of
// two built in the exponent bits; NaN inputs are passed through.
// CHECK-LABEL: func.func @expands_vector_exp(
// CHECK-SAME:      %[[X:[^:]+]]: vector<16xf32>)
// CHECK-NOT:     math.exp
// CHECK:         %[[HI:.+]] = arith.minimumf %[[X]], %{{.+}} : vector<16xf32>
// CHECK:         %[[C:.+]] = arith.maximumf %[[HI]], %{{.+}} : vector<16xf32>
// CHECK:         %[[N:.+]] = math.floor %{{.+}} : vector<16xf32>
// CHECK-COUNT-7: math.fma
// CHECK:         arith.fptosi %[[N]] : vector<16xf32> to vector<16xi32>
// CHECK-COUNT-2: arith.bitcast %{{.+}} : vector<16xi32> to vector<16xf32>
// CHECK:         %[[NAN:.+]] = arith.cmpf uno, %[[X]], %[[X]] : vector<16xf32>
// CHECK:         %[[R:.+]] = arith.select %[[NAN]], %[[X]], %{{.+}} : vector<16xi1>, vector<16xf32>
// CHECK-NOT:     math.exp
// CHECK:         return %[[R]]
func.func @expands_vector_exp(%x: vector<16xf32>) -> vector<16xf32> {
  %r = math.exp %x : vector<16xf32>
  return %r : vector<16xf32>
}

// -----

// A scalar f32 exp takes the same code in scalars.
// CHECK-LABEL: func.func @expands_scalar_exp(
// CHECK-NOT:     math.exp
// CHECK:         math.floor %{{.+}} : f32
// CHECK:         arith.bitcast %{{.+}} : i32 to f32
// CHECK:         return
func.func @expands_scalar_exp(%x: f32) -> f32 {
  %r = math.exp %x : f32
  return %r : f32
}

// -----

// f64 keeps libm's exp: the pass does not fire.
// CHECK-LABEL: func.func @keeps_f64_exp(
// CHECK-NEXT:    %[[R:.+]] = math.exp %{{.+}} : vector<4xf64>
// CHECK-NEXT:    return %[[R]]
func.func @keeps_f64_exp(%x: vector<4xf64>) -> vector<4xf64> {
  %r = math.exp %x : vector<4xf64>
  return %r : vector<4xf64>
}
