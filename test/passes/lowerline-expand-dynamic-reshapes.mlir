// RUN: lowerline-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(lowerline-expand-dynamic-reshapes))" | FileCheck %s

// Attention's scores (batch * heads, seq, seq) viewed as (batch, heads, seq,
// seq): the shape's dynamic entries are the source's size %n (through an
// index_cast), so the reshape is an expand_shape with output sizes %n.
// CHECK-LABEL: func.func @expands_heads(
// CHECK-SAME:      %[[N:[a-z0-9]+]]: index
// CHECK-NOT:     tensor.reshape
// CHECK:         tensor.expand_shape %{{.+}} {{\[}}[0, 1], [2], [3]] output_shape [2, 4, %[[N]], %[[N]]] : tensor<8x?x?xf32> into tensor<2x4x?x?xf32>
func.func @expands_heads(%n: index) -> tensor<2x4x?x?xf32> {
  %e = tensor.empty(%n, %n) : tensor<8x?x?xf32>
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %ni = arith.index_cast %n : index to i64
  %shape = tensor.from_elements %c2, %c4, %ni, %ni : tensor<4xi64>
  %r = tensor.reshape %e(%shape) : (tensor<8x?x?xf32>, tensor<4xi64>) -> tensor<2x4x?x?xf32>
  return %r : tensor<2x4x?x?xf32>
}

// -----

// The way back: (batch, heads, seq, seq) as (batch * heads, seq, seq).
// CHECK-LABEL: func.func @collapses_heads(
// CHECK-NOT:     tensor.reshape
// CHECK:         tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2], [3]] : tensor<2x4x?x?xf32> into tensor<8x?x?xf32>
func.func @collapses_heads(%n: index) -> tensor<8x?x?xf32> {
  %e = tensor.empty(%n, %n) : tensor<2x4x?x?xf32>
  %c8 = arith.constant 8 : i64
  %ni = arith.index_cast %n : index to i64
  %shape = tensor.from_elements %c8, %ni, %ni : tensor<3xi64>
  %r = tensor.reshape %e(%shape) : (tensor<2x4x?x?xf32>, tensor<3xi64>) -> tensor<8x?x?xf32>
  return %r : tensor<8x?x?xf32>
}

// -----

// Unit dims join a group: (?, 64) as (1, ?, 64, 1).
// CHECK-LABEL: func.func @unit_dims_join_groups(
// CHECK:         tensor.expand_shape %{{.+}} {{\[}}[0, 1], [2, 3]] output_shape [1, %{{.+}}, 64, 1]
func.func @unit_dims_join_groups(%n: index) -> tensor<1x?x64x1xf32> {
  %e = tensor.empty(%n) : tensor<?x64xf32>
  %c1 = arith.constant 1 : i64
  %c64 = arith.constant 64 : i64
  %ni = arith.index_cast %n : index to i64
  %shape = tensor.from_elements %c1, %ni, %c64, %c1 : tensor<4xi64>
  %r = tensor.reshape %e(%shape) : (tensor<?x64xf32>, tensor<4xi64>) -> tensor<1x?x64x1xf32>
  return %r : tensor<1x?x64x1xf32>
}

// -----

// The shape's dynamic entry is another value than the source's size: the
// product may be split differently (8 x 6 x 4 as 2 x 4 x 4 x 6), so the
// reshape stays.
// CHECK-LABEL: func.func @unproved_size_is_left(
// CHECK:         tensor.reshape
// CHECK-NOT:     tensor.expand_shape
func.func @unproved_size_is_left(%n: index, %m: i64) -> tensor<2x4x?x?xf32> {
  %e = tensor.empty(%n, %n) : tensor<8x?x?xf32>
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %shape = tensor.from_elements %c2, %c4, %m, %m : tensor<4xi64>
  %r = tensor.reshape %e(%shape) : (tensor<8x?x?xf32>, tensor<4xi64>) -> tensor<2x4x?x?xf32>
  return %r : tensor<2x4x?x?xf32>
}

// -----

// A source whose size is not traced (a function argument): left alone.
// CHECK-LABEL: func.func @untraced_source_is_left(
// CHECK:         tensor.reshape
func.func @untraced_source_is_left(%x: tensor<8x?x?xf32>, %n: i64) -> tensor<2x4x?x?xf32> {
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %shape = tensor.from_elements %c2, %c4, %n, %n : tensor<4xi64>
  %r = tensor.reshape %x(%shape) : (tensor<8x?x?xf32>, tensor<4xi64>) -> tensor<2x4x?x?xf32>
  return %r : tensor<2x4x?x?xf32>
}

// -----

// Static products that do not line up (6 x 4 as 4 x 2 x 3: no run of the
// result's dims multiplies to 6) and a shape that is not built from
// elements: left alone.
// CHECK-LABEL: func.func @mismatched_products_are_left(
// CHECK:         tensor.reshape
// CHECK:         tensor.reshape
// CHECK-NOT:     tensor.expand_shape
func.func @mismatched_products_are_left(%n: index, %s: tensor<4xi64>) -> (tensor<?x4x2x3xf32>, tensor<?x2x3x4xf32>) {
  %e = tensor.empty(%n) : tensor<?x6x4xf32>
  %ni = arith.index_cast %n : index to i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %c4 = arith.constant 4 : i64
  %shape = tensor.from_elements %ni, %c4, %c2, %c3 : tensor<4xi64>
  %r = tensor.reshape %e(%shape) : (tensor<?x6x4xf32>, tensor<4xi64>) -> tensor<?x4x2x3xf32>
  %r2 = tensor.reshape %e(%s) : (tensor<?x6x4xf32>, tensor<4xi64>) -> tensor<?x2x3x4xf32>
  return %r, %r2 : tensor<?x4x2x3xf32>, tensor<?x2x3x4xf32>
}
