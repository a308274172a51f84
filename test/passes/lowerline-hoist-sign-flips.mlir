// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-hoist-sign-flips))" \
// RUN:   --split-input-file | FileCheck %s

// A u8 -> s8 shift behind a transpose moves into the quantize that made
// the bytes; the residual that also reads them flips them back in its body.
// CHECK-LABEL: func.func @shift_behind_transpose(
// CHECK:         %[[Q:.+]] = linalg.generic
// CHECK:           %[[U:.+]] = arith.fptoui
// CHECK:           %[[S:.+]] = arith.xori %[[U]], %{{.+}} : i8
// CHECK:           linalg.yield %[[S]] : i8
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[Q]]
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[Q]] :
// CHECK-NEXT:    ^bb0(%[[IN:.+]]: i8, %{{.+}}: f32):
// CHECK:           %[[B:.+]] = arith.xori %[[IN]], %{{.+}} : i8
// CHECK-NEXT:      arith.extui %[[B]]
// CHECK-NOT:     arith.xori
// CHECK:         return %[[T]], %[[R]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @shift_behind_transpose(%x: tensor<4x8xf32>) -> (tensor<8x4xi8>, tensor<4x8xf32>) {
  %s = arith.constant 0.5 : f32
  %flip = arith.constant -128 : i8
  %e8 = tensor.empty() : tensor<4x8xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e8 : tensor<4x8xi8>) {
  ^bb0(%a: f32, %o: i8):
    %d = arith.divf %a, %s : f32
    %u = arith.fptoui %d : f32 to i8
    linalg.yield %u : i8
  } -> tensor<4x8xi8>
  %et = tensor.empty() : tensor<8x4xi8>
  %t = linalg.transpose ins(%q : tensor<4x8xi8>) outs(%et : tensor<8x4xi8>) permutation = [1, 0]
  %sh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<8x4xi8>) outs(%et : tensor<8x4xi8>) {
  ^bb0(%a: i8, %o: i8):
    %r = arith.xori %a, %flip : i8
    linalg.yield %r : i8
  } -> tensor<8x4xi8>
  %ef = tensor.empty() : tensor<4x8xf32>
  %res = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<4x8xi8>) outs(%ef : tensor<4x8xf32>) {
  ^bb0(%a: i8, %o: f32):
    %w = arith.extui %a : i8 to i32
    %f = arith.sitofp %w : i32 to f32
    linalg.yield %f : f32
  } -> tensor<4x8xf32>
  return %sh, %res : tensor<8x4xi8>, tensor<4x8xf32>
}

// -----

// The bytes are also padded (a pad cannot flip them back): nothing moves.
// CHECK-LABEL: func.func @other_reader_is_a_pad(
// CHECK:         linalg.generic
// CHECK-NOT:       arith.xori
// CHECK:           linalg.yield
// CHECK:         linalg.transpose
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.xori
// CHECK:         tensor.pad
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @other_reader_is_a_pad(%x: tensor<4x8xf32>) -> (tensor<8x4xi8>, tensor<6x8xi8>) {
  %flip = arith.constant -128 : i8
  %zero = arith.constant 0 : i8
  %e8 = tensor.empty() : tensor<4x8xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e8 : tensor<4x8xi8>) {
  ^bb0(%a: f32, %o: i8):
    %u = arith.fptoui %a : f32 to i8
    linalg.yield %u : i8
  } -> tensor<4x8xi8>
  %et = tensor.empty() : tensor<8x4xi8>
  %t = linalg.transpose ins(%q : tensor<4x8xi8>) outs(%et : tensor<8x4xi8>) permutation = [1, 0]
  %sh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<8x4xi8>) outs(%et : tensor<8x4xi8>) {
  ^bb0(%a: i8, %o: i8):
    %r = arith.xori %a, %flip : i8
    linalg.yield %r : i8
  } -> tensor<8x4xi8>
  %p = tensor.pad %q low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : i8
  } : tensor<4x8xi8> to tensor<6x8xi8>
  return %sh, %p : tensor<8x4xi8>, tensor<6x8xi8>
}

// -----

// Bytes from a function argument have no producer to take the shift.
// CHECK-LABEL: func.func @argument_bytes(
// CHECK:         linalg.transpose
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.xori
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @argument_bytes(%q: tensor<4x8xi8>) -> tensor<8x4xi8> {
  %flip = arith.constant -128 : i8
  %et = tensor.empty() : tensor<8x4xi8>
  %t = linalg.transpose ins(%q : tensor<4x8xi8>) outs(%et : tensor<8x4xi8>) permutation = [1, 0]
  %sh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<8x4xi8>) outs(%et : tensor<8x4xi8>) {
  ^bb0(%a: i8, %o: i8):
    %r = arith.xori %a, %flip : i8
    linalg.yield %r : i8
  } -> tensor<8x4xi8>
  return %sh : tensor<8x4xi8>
}
