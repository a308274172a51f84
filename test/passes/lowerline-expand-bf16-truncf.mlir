// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-expand-bf16-truncf)" \
// RUN:   --split-input-file | FileCheck %s

// f32 -> bf16: round to nearest even on the bits; a NaN becomes 0x7FC0.
// CHECK-LABEL: func.func @expands_f32(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: f32) -> bf16
// CHECK-NOT:     arith.truncf
// CHECK:         %[[BITS:.+]] = arith.bitcast %[[X]] : f32 to i32
// CHECK:         %[[C16:.+]] = arith.constant 16 : i32
// CHECK:         %[[SHIFTED:.+]] = arith.shrui %[[BITS]], %[[C16]] : i32
// CHECK:         %[[C1:.+]] = arith.constant 1 : i32
// CHECK:         %[[LSB:.+]] = arith.andi %[[SHIFTED]], %[[C1]] : i32
// CHECK:         %[[C7FFF:.+]] = arith.constant 32767 : i32
// CHECK:         %[[BIAS:.+]] = arith.addi %[[C7FFF]], %[[LSB]] : i32
// CHECK:         %[[SUM:.+]] = arith.addi %[[BITS]], %[[BIAS]] : i32
// CHECK:         %[[HIGH:.+]] = arith.shrui %[[SUM]], %[[C16]] : i32
// CHECK:         %[[H16:.+]] = arith.trunci %[[HIGH]] : i32 to i16
// CHECK:         %[[NAN:.+]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK:         %[[QNAN:.+]] = arith.constant 32704 : i16
// CHECK:         %[[SEL:.+]] = arith.select %[[NAN]], %[[QNAN]], %[[H16]] : i16
// CHECK:         %[[R:.+]] = arith.bitcast %[[SEL]] : i16 to bf16
// CHECK:         return %[[R]] : bf16
func.func @expands_f32(%x: f32) -> bf16 {
  %r = arith.truncf %x : f32 to bf16
  return %r : bf16
}

// -----

// f64 -> bf16: to f32 rounding to odd (nearest, one step toward zero if
// that went away from zero, last bit set if inexact), then as from f32.
// CHECK-LABEL: func.func @expands_f64_through_round_to_odd_f32(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: f64) -> bf16
// CHECK:         %[[NEAR:.+]] = arith.truncf %[[X]] : f64 to f32
// CHECK:         %[[BACK:.+]] = arith.extf %[[NEAR]] : f32 to f64
// CHECK:         %[[BITS:.+]] = arith.bitcast %[[NEAR]] : f32 to i32
// CHECK:         %[[POS:.+]] = arith.cmpf ogt, %[[X]], %{{.+}} : f64
// CHECK:         %[[ABOVE:.+]] = arith.cmpf ogt, %[[BACK]], %[[X]] : f64
// CHECK:         %[[BELOW:.+]] = arith.cmpf olt, %[[BACK]], %[[X]] : f64
// CHECK:         %[[AWAY:.+]] = arith.select %[[POS]], %[[ABOVE]], %[[BELOW]] : i1
// CHECK:         %[[DOWN:.+]] = arith.subi %[[BITS]], %[[ONE:.+]] : i32
// CHECK:         %[[TZ:.+]] = arith.select %[[AWAY]], %[[DOWN]], %[[BITS]] : i32
// CHECK:         %[[INEXACT:.+]] = arith.cmpf one, %[[BACK]], %[[X]] : f64
// CHECK:         %[[SET:.+]] = arith.ori %[[TZ]], %[[ONE]] : i32
// CHECK:         %[[ODD:.+]] = arith.select %[[INEXACT]], %[[SET]], %[[BITS]] : i32
// CHECK:         %[[F32:.+]] = arith.bitcast %[[ODD]] : i32 to f32
// CHECK:         arith.bitcast %[[F32]] : f32 to i32
// CHECK-NOT:     arith.truncf
// CHECK:         %[[R:.+]] = arith.bitcast %{{.+}} : i16 to bf16
// CHECK:         return %[[R]] : bf16
func.func @expands_f64_through_round_to_odd_f32(%x: f64) -> bf16 {
  %r = arith.truncf %x : f64 to bf16
  return %r : bf16
}

// -----

// Vectors are expanded lane by lane, with splat constants.
// CHECK-LABEL: func.func @expands_vector(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: vector<8xf32>) -> vector<8xbf16>
// CHECK:         arith.bitcast %[[X]] : vector<8xf32> to vector<8xi32>
// CHECK:         arith.constant dense<16> : vector<8xi32>
// CHECK:         arith.trunci %{{.+}} : vector<8xi32> to vector<8xi16>
// CHECK:         arith.constant dense<32704> : vector<8xi16>
// CHECK:         %[[R:.+]] = arith.bitcast %{{.+}} : vector<8xi16> to vector<8xbf16>
// CHECK:         return %[[R]]
func.func @expands_vector(%x: vector<8xf32>) -> vector<8xbf16> {
  %r = arith.truncf %x : vector<8xf32> to vector<8xbf16>
  return %r : vector<8xbf16>
}

// -----

// Truncations to other types, with an explicit rounding mode, and the
// extension from bf16 are left alone.
// CHECK-LABEL: func.func @keeps_other_conversions(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: f32, %[[D:[a-z0-9]+]]: f64, %[[B:[a-z0-9]+]]: bf16)
// CHECK-NEXT:    %[[H:.+]] = arith.truncf %[[X]] : f32 to f16
// CHECK-NEXT:    %[[S:.+]] = arith.truncf %[[D]] : f64 to f32
// CHECK-NEXT:    %[[Z:.+]] = arith.truncf %[[X]] toward_zero : f32 to bf16
// CHECK-NEXT:    %[[E:.+]] = arith.extf %[[B]] : bf16 to f32
// CHECK-NEXT:    return %[[H]], %[[S]], %[[Z]], %[[E]]
func.func @keeps_other_conversions(%x: f32, %d: f64, %b: bf16) -> (f16, f32, bf16, f32) {
  %h = arith.truncf %x : f32 to f16
  %s = arith.truncf %d : f64 to f32
  %z = arith.truncf %x toward_zero : f32 to bf16
  %e = arith.extf %b : bf16 to f32
  return %h, %s, %z, %e : f16, f32, bf16, f32
}
