// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-expand-minmax-reductions)" \
// RUN:   --split-input-file | FileCheck %s

// A row max with its init: four halving steps of compare and select (one
// vmaxps each), the init compared last, then one NaN check of the whole
// vector and the init selects a NaN.
// CHECK-LABEL: func.func @max_in_halves(
// CHECK-SAME:      %[[V:[a-z0-9]+]]: vector<16xf32>, %[[ACC:[a-z0-9]+]]: f32
// CHECK-NOT:     vector.reduction <maximumf>
// CHECK:         %[[L8:.+]] = vector.shuffle %[[V]], %[[V]] [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK:         %[[H8:.+]] = vector.shuffle %[[V]], %[[V]] [8, 9, 10, 11, 12, 13, 14, 15]
// CHECK:         %[[G8:.+]] = arith.cmpf ogt, %[[L8]], %[[H8]] : vector<8xf32>
// CHECK:         %[[M8:.+]] = arith.select %[[G8]], %[[L8]], %[[H8]]
// CHECK:         arith.cmpf ogt, {{.+}} : vector<4xf32>
// CHECK:         arith.cmpf ogt, {{.+}} : vector<2xf32>
// CHECK:         arith.cmpf ogt, {{.+}} : vector<1xf32>
// CHECK:         %[[LANE:.+]] = vector.extract %{{.+}}[0] : f32 from vector<1xf32>
// CHECK:         %[[G:.+]] = arith.cmpf ogt, %[[LANE]], %[[ACC]] : f32
// CHECK:         %[[BEST:.+]] = arith.select %[[G]], %[[LANE]], %[[ACC]] : f32
// CHECK:         %[[NAN:.+]] = arith.constant 0x7FC00000 : f32
// CHECK:         %[[UNO:.+]] = arith.cmpf uno, %[[V]], %[[V]] : vector<16xf32>
// CHECK:         %[[ANY:.+]] = vector.reduction <or>, %[[UNO]] : vector<16xi1> into i1
// CHECK:         %[[UACC:.+]] = arith.cmpf uno, %[[ACC]], %[[ACC]] : f32
// CHECK:         %[[EITHER:.+]] = arith.ori %[[ANY]], %[[UACC]] : i1
// CHECK:         %[[R:.+]] = arith.select %[[EITHER]], %[[NAN]], %[[BEST]] : f32
// CHECK:         return %[[R]]
func.func @max_in_halves(%v: vector<16xf32>, %acc: f32) -> f32 {
  %s = vector.reduction <maximumf>, %v, %acc : vector<16xf32> into f32
  return %s : f32
}

// -----

// An odd length (a static row of 17) without an init: overlapping halves
// (lane 8 taken twice), compares with <.
// CHECK-LABEL: func.func @min_odd_length(
// CHECK-SAME:      %[[V:[a-z0-9]+]]: vector<17xf32>
// CHECK:         %[[L:.+]] = vector.shuffle %[[V]], %[[V]] [0, 1, 2, 3, 4, 5, 6, 7, 8]
// CHECK:         %[[H:.+]] = vector.shuffle %[[V]], %[[V]] [8, 9, 10, 11, 12, 13, 14, 15, 16]
// CHECK:         arith.cmpf olt, %[[L]], %[[H]] : vector<9xf32>
// CHECK:         vector.shuffle %{{.+}} [0, 1, 2, 3, 4] : vector<9xf32>
// CHECK:         vector.shuffle %{{.+}} [4, 5, 6, 7, 8] : vector<9xf32>
// CHECK:         arith.cmpf uno, %[[V]], %[[V]] : vector<17xf32>
// CHECK-NOT:     arith.ori
// CHECK-NOT:     vector.reduction <minimumf>
func.func @min_odd_length(%v: vector<17xf32>) -> f32 {
  %s = vector.reduction <minimumf>, %v : vector<17xf32> into f32
  return %s : f32
}

// -----

// Sums, NaN-ignoring maxima (maxnumf) and masked reductions are left as
// they are.
// CHECK-LABEL: func.func @keeps_other_reductions(
// CHECK:         vector.reduction <add>
// CHECK:         vector.reduction <maxnumf>
// CHECK:         vector.mask %{{.+}} { vector.reduction <maximumf>
// CHECK-NOT:     arith.select
func.func @keeps_other_reductions(%v: vector<16xf32>, %m: vector<16xi1>) -> (f32, f32, f32) {
  %a = vector.reduction <add>, %v : vector<16xf32> into f32
  %b = vector.reduction <maxnumf>, %v : vector<16xf32> into f32
  %c = vector.mask %m { vector.reduction <maximumf>, %v : vector<16xf32> into f32 } : vector<16xi1> -> f32
  return %a, %b, %c : f32, f32, f32
}
