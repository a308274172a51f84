// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-check-integer-division)" \
// RUN:   --split-input-file | FileCheck %s

// A scalar remainder by a value: the divisor is checked, with the op's
// location, before the op.
// CHECK-LABEL: func.func @remainder(
// CHECK-SAME:    %[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK:         %[[Z:.*]] = arith.constant 0 : i32
// CHECK:         %[[OK:.*]] = arith.cmpi ne, %[[B]], %[[Z]] : i32
// CHECK:         cf.assert %[[OK]], "integer division by zero (arith.remsi)"
// CHECK-NEXT:    arith.remsi %[[A]], %[[B]] : i32
func.func @remainder(%a: i32, %b: i32) -> i32 {
  %r = arith.remsi %a, %b : i32
  return %r : i32
}

// -----

// A vector divisor: every lane is checked, reduced with and.
// CHECK-LABEL: func.func @vector_floordiv(
// CHECK:         %[[LANES:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : vector<4xi64>
// CHECK:         %[[OK:.*]] = vector.reduction <and>, %[[LANES]] : vector<4xi1> into i1
// CHECK:         cf.assert %[[OK]], "integer division by zero (arith.floordivsi)"
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
