// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-lower-tm-tensor)" \
// RUN:   --split-input-file --verify-diagnostics

// A comparator that is not one compare of the two keys has no torch order.
func.func @rejects_unknown_comparator(%k: tensor<6xf32>) -> tensor<6xf32> {
  // expected-error @below {{lowerline.tm_sort: its comparator is not one arith.cmpf/cmpi of the two keys}}
  %r = "lowerline.tm_sort"(%k) {combiner = @by_magnitude, dimension = 0 : i64}
      : (tensor<6xf32>) -> tensor<6xf32>
  return %r : tensor<6xf32>
}
func.func private @by_magnitude(%a: f32, %b: f32) -> i1 {
  %x = math.absf %a : f32
  %y = math.absf %b : f32
  %c = arith.cmpf olt, %x, %y : f32
  return %c : i1
}

// -----

// The combiner must be a function of the module.
func.func @rejects_missing_combiner(%x: tensor<4xf32>, %o: tensor<4xf32>, %a: tensor<f32>) -> tensor<4xf32> {
  // expected-error @below {{lowerline.tm_scan: combiner @nowhere is not a function in this module}}
  %r:2 = "lowerline.tm_scan"(%x, %o, %a) {combiner = @nowhere, dimension = 0 : i64, inclusive = true}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<f32>)
  return %r#0 : tensor<4xf32>
}

// -----

// Equality is not an order.
func.func @rejects_equality_comparator(%k: tensor<6xf32>) -> tensor<6xf32> {
  // expected-error @below {{lowerline.tm_sort: comparator predicate 'oeq' is not an order}}
  %r = "lowerline.tm_sort"(%k) {combiner = @equal, dimension = 0 : i64}
      : (tensor<6xf32>) -> tensor<6xf32>
  return %r : tensor<6xf32>
}
func.func private @equal(%a: f32, %b: f32) -> i1 {
  %c = arith.cmpf oeq, %a, %b : f32
  return %c : i1
}
