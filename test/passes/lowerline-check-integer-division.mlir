// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-check-integer-division)" \
// RUN:   --split-input-file | FileCheck %s

// A scalar remainder by a value: the divisor is checked, with the op's
// location, before the op. A divisor of -1 becomes 1 (INT_MIN rem -1
// overflows; the remainder by 1 is the same zero).
// CHECK-LABEL: func.func @remainder(
// CHECK-SAME:    %[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK:         %[[Z:.*]] = arith.constant 0 : i32
// CHECK:         %[[OK:.*]] = arith.cmpi ne, %[[B]], %[[Z]] : i32
// CHECK:         cf.assert %[[OK]], "integer division by zero (arith.remsi)"
// CHECK:         %[[M1:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : i32
// CHECK:         %[[SAFE:.*]] = arith.select %[[M1]], %{{.*}}, %[[B]] : i32
// CHECK-NEXT:    %[[R:.*]] = arith.remsi %[[A]], %[[SAFE]] : i32
// CHECK-NEXT:    return %[[R]]
func.func @remainder(%a: i32, %b: i32) -> i32 {
  %r = arith.remsi %a, %b : i32
  return %r : i32
}

// -----

// A signed quotient by -1 is the negated quotient by 1, so INT_MIN / -1
// wraps to INT_MIN instead of trapping; every use takes the selected value.
// CHECK-LABEL: func.func @quotient(
// CHECK-SAME:    %[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK:         cf.assert %{{.*}}, "integer division by zero (arith.divsi)"
// CHECK:         %[[M1:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : i32
// CHECK:         %[[SAFE:.*]] = arith.select %[[M1]], %{{.*}}, %[[B]] : i32
// CHECK-NEXT:    %[[Q:.*]] = arith.divsi %[[A]], %[[SAFE]] : i32
// CHECK:         %[[NEG:.*]] = arith.subi %{{.*}}, %[[Q]] : i32
// CHECK-NEXT:    %[[SEL:.*]] = arith.select %[[M1]], %[[NEG]], %[[Q]] : i32
// CHECK-NEXT:    %[[SUM:.*]] = arith.addi %[[SEL]], %[[SEL]] : i32
// CHECK-NEXT:    return %[[SEL]], %[[SUM]]
func.func @quotient(%a: i32, %b: i32) -> (i32, i32) {
  %q = arith.divsi %a, %b : i32
  %s = arith.addi %q, %q : i32
  return %q, %s : i32, i32
}

// -----

// Unsigned division cannot overflow: checked for zero only.
// CHECK-LABEL: func.func @unsigned(
// CHECK-SAME:    %[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK:         cf.assert %{{.*}}, "integer division by zero (arith.divui)"
// CHECK-NEXT:    %[[Q:.*]] = arith.divui %[[A]], %[[B]] : i32
// CHECK-NEXT:    return %[[Q]]
func.func @unsigned(%a: i32, %b: i32) -> i32 {
  %q = arith.divui %a, %b : i32
  return %q : i32
}

// -----

// A vector divisor: every lane is checked, reduced with and.
// CHECK-LABEL: func.func @vector_floordiv(
// CHECK:         %[[LANES:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : vector<4xi64>
// CHECK:         %[[OK:.*]] = vector.reduction <and>, %[[LANES]] : vector<4xi1> into i1
// CHECK:         cf.assert %[[OK]], "integer division by zero (arith.floordivsi)"
// CHECK:         arith.select %{{.*}} : vector<4xi1>, vector<4xi64>
// CHECK-NEXT:    arith.floordivsi
func.func @vector_floordiv(%a: vector<4xi64>, %b: vector<4xi64>) -> vector<4xi64> {
  %r = arith.floordivsi %a, %b : vector<4xi64>
  return %r : vector<4xi64>
}

// -----

// Not checked: a constant divisor, an index division (the compiler's own),
// float division (defined: inf / nan).
// CHECK-LABEL: func.func @unchecked(
// CHECK-NOT:     cf.assert
func.func @unchecked(%a: i32, %i: index, %n: index, %x: f32, %y: f32) -> (i32, index, f32, f32) {
  %c7 = arith.constant 7 : i32
  %r = arith.divui %a, %c7 : i32
  %q = arith.divui %i, %n : index
  %f = arith.divf %x, %y : f32
  %m = arith.remf %x, %y : f32
  return %r, %q, %f, %m : i32, index, f32, f32
}
