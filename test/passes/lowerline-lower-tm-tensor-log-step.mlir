// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-lower-tm-tensor{log-step-scans})" \
// RUN:   --split-input-file | FileCheck %s

// The GPU path's cumsum of 5 along dim 1: three elementwise steps (shifts of
// 1, 2, 4), each combining an element with the one `shift` before it (read
// at the clamped index), the first `shift` elements kept; no loops.
// CHECK-LABEL: func.func @inclusive_scan_is_log_steps(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<3x5xf32>
// CHECK-NOT:     scf.for
// CHECK:         %[[S1:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<3x5xf32>)
// CHECK:           %[[J:.+]] = linalg.index 1 : index
// CHECK:           %[[LATE:.+]] = arith.cmpi uge, %[[J]], %[[C1:.+]] : index
// CHECK:           %[[P:.+]] = tensor.extract %[[X]]
// CHECK:           %[[SUM:.+]] = arith.addf %[[P]], %[[IN:.+]] : f32
// CHECK:           arith.select %[[LATE]], %[[SUM]], %[[IN]] : f32
// CHECK:         %[[S2:.+]] = linalg.generic {{.+}} ins(%[[S1]] : tensor<3x5xf32>)
// CHECK:         %[[S3:.+]] = linalg.generic {{.+}} ins(%[[S2]] : tensor<3x5xf32>)
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[S3]]
func.func @inclusive_scan_is_log_steps(%x: tensor<3x5xf32>, %init: tensor<3x5xf32>, %acc: tensor<3xf32>) -> tensor<3x5xf32> {
  %r:2 = "lowerline.tm_scan"(%x, %init, %acc) {combiner = @combine_add, dimension = 1 : i64, inclusive = true}
      : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3xf32>) -> (tensor<3x5xf32>, tensor<3xf32>)
  return %r#0 : tensor<3x5xf32>
}
func.func private @combine_add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// An exclusive scan is not a log-step scan: loops, as without the option.
// CHECK-LABEL: func.func @exclusive_scan_stays_loops(
// CHECK-NOT:     linalg.generic
// CHECK:         scf.for
func.func @exclusive_scan_stays_loops(%x: tensor<3x5xi32>, %init: tensor<3x5xi32>, %acc: tensor<3xi32>) -> tensor<3x5xi32> {
  %r:2 = "lowerline.tm_scan"(%x, %init, %acc) {combiner = @combine_addi, dimension = 1 : i64, inclusive = false}
      : (tensor<3x5xi32>, tensor<3x5xi32>, tensor<3xi32>) -> (tensor<3x5xi32>, tensor<3xi32>)
  return %r#0 : tensor<3x5xi32>
}
func.func private @combine_addi(%a: i32, %b: i32) -> i32 {
  %s = arith.addi %a, %b : i32
  return %s : i32
}
