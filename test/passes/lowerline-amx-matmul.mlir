// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-amx-matmul{target=sapphirerapids explain=1}))" \
// RUN:   --split-input-file 2>%t.explain | FileCheck %s
// RUN: FileCheck %s --check-prefix=EXPLAIN < %t.explain
// Without AMX (znver4: AVX-512 VNNI, which lowerline-vectorize uses instead) nothing changes.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-amx-matmul{target=znver4}))" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NOAMX

// A 13x5 by 5x2 int8 matmul with a constant B: A zero-padded to whole tiles
// (16 rows, 64 bytes of k) and grouped by 4 bytes, B packed at compile time
// in AMX's VNNI layout (row q holds B[4q..4q+3, n] for each column n, zero
// past K and N), C padded to 16x16 from the fill's value; the result is the
// top-left 13x2 of the padded one.
// EXPLAIN: lowerline-amx-matmul.mlir:[[@LINE+26]]:8: remark: linalg.matmul: 13x5 by 5x2 i8 matmul on AMX tiles (tdpbssd), B packed
// CHECK-LABEL: func.func @odd_sizes(
// CHECK-SAME:      %[[A:.+]]: tensor<13x5xi8>
// CHECK:         %[[B:.+]] = arith.constant dense_resource<[[BLOB:.+\.amx]]> : tensor<16x16x4xi8>
// CHECK:         %[[Z:.+]] = linalg.fill ins(%{{.+}} : i8) outs(%{{.+}} : tensor<16x64xi8>)
// CHECK:         %[[P:.+]] = tensor.insert_slice %[[A]] into %[[Z]][0, 0] [13, 5] [1, 1]
// CHECK:         %[[G:.+]] = tensor.expand_shape %[[P]] {{\[\[}}0], [1, 2]] output_shape [16, 16, 4]
// CHECK:         %[[C:.+]] = linalg.fill ins(%{{.+}} : i32) outs(%{{.+}} : tensor<16x16xi32>)
// CHECK:         %[[M:.+]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK-SAME:      ins(%[[G]], %[[B]] : tensor<16x16x4xi8>, tensor<16x16x4xi8>) outs(%[[C]] : tensor<16x16xi32>)
// CHECK-SAME:      lowerline.amx_tiles
// CHECK:           arith.extsi
// CHECK:           arith.extsi
// CHECK:         %[[R:.+]] = tensor.extract_slice %[[M]][0, 0] [13, 2] [1, 1] : tensor<16x16xi32> to tensor<13x2xi32>
// CHECK:         return %[[R]]
// Row 0: B[0..3, 0] = 1 3 5 7, B[0..3, 1] = 2 4 6 8, zeros; row 1: B[4, 0] = 9, B[4, 1] = 10.
// CHECK:       [[BLOB]]: "0x400000000103050702040608{{(00){55}00}}090000000A000000{{(00)+}}"
// NOAMX-LABEL: func.func @odd_sizes(
// NOAMX:         linalg.matmul
// NOAMX-NOT:     lowerline.amx_tiles
func.func @odd_sizes(%a: tensor<13x5xi8>) -> tensor<13x2xi32> {
  %b = arith.constant dense<[[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]> : tensor<5x2xi8>
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<13x2xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<13x2xi32>) -> tensor<13x2xi32>
  %m = linalg.matmul ins(%a, %b : tensor<13x5xi8>, tensor<5x2xi8>) outs(%f : tensor<13x2xi32>) -> tensor<13x2xi32>
  return %m : tensor<13x2xi32>
}

// -----

// An accumulator that is not a fill (a bias): copied into the zero-padded
// C. Whole tiles of A (16 rows, 64 bytes) need no padding.
// CHECK-LABEL: func.func @bias_init(
// CHECK-SAME:      %[[A:.+]]: tensor<16x64xi8>, %[[BIAS:.+]]: tensor<16x9xi32>
// CHECK-NOT:     tensor.insert_slice %[[A]]
// CHECK:         %[[G:.+]] = tensor.expand_shape %[[A]] {{\[\[}}0], [1, 2]] output_shape [16, 16, 4]
// CHECK:         %[[C:.+]] = tensor.insert_slice %[[BIAS]] into %{{.+}}[0, 0] [16, 9] [1, 1]
// CHECK:         %[[M:.+]] = linalg.generic {{.+}} ins(%[[G]], %{{.+}} : tensor<16x16x4xi8>, tensor<16x16x4xi8>) outs(%[[C]] : tensor<16x16xi32>)
// CHECK:         tensor.extract_slice %[[M]][0, 0] [16, 9] [1, 1]
func.func @bias_init(%a: tensor<16x64xi8>, %bias: tensor<16x9xi32>) -> tensor<16x9xi32> {
  %b = arith.constant dense<1> : tensor<64x9xi8>
  %m = linalg.matmul ins(%a, %b : tensor<16x64xi8>, tensor<64x9xi8>) outs(%bias : tensor<16x9xi32>) -> tensor<16x9xi32>
  return %m : tensor<16x9xi32>
}

// -----

// Left alone: B not a constant (its bytes cannot be packed at compile time).
// EXPLAIN: lowerline-amx-matmul.mlir:[[@LINE+5]]:8: remark: linalg.matmul: not on AMX tiles: B is not a constant with known bytes
// CHECK-LABEL: func.func @runtime_weights(
// CHECK:         linalg.matmul
// CHECK-NOT:     lowerline.amx_tiles
func.func @runtime_weights(%a: tensor<8x32xi8>, %b: tensor<32x16xi8>, %c: tensor<8x16xi32>) -> tensor<8x16xi32> {
  %m = linalg.matmul ins(%a, %b : tensor<8x32xi8>, tensor<32x16xi8>) outs(%c : tensor<8x16xi32>) -> tensor<8x16xi32>
  return %m : tensor<8x16xi32>
}

// -----

// Left alone: a dynamic number of rows.
// EXPLAIN: lowerline-amx-matmul.mlir:[[@LINE+6]]:8: remark: linalg.matmul: not on AMX tiles: not i8 x i8 -> i32 with static shapes
// CHECK-LABEL: func.func @dynamic_rows(
// CHECK:         linalg.matmul
// CHECK-NOT:     lowerline.amx_tiles
func.func @dynamic_rows(%a: tensor<?x32xi8>, %c: tensor<?x16xi32>) -> tensor<?x16xi32> {
  %b = arith.constant dense<1> : tensor<32x16xi8>
  %m = linalg.matmul ins(%a, %b : tensor<?x32xi8>, tensor<32x16xi8>) outs(%c : tensor<?x16xi32>) -> tensor<?x16xi32>
  return %m : tensor<?x16xi32>
}

// -----

// Not an integer matmul: nothing to say.
// EXPLAIN-NOT: f32_matmul
// CHECK-LABEL: func.func @f32_matmul(
// CHECK:         linalg.matmul
func.func @f32_matmul(%a: tensor<8x32xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %b = arith.constant dense<1.0> : tensor<32x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x32xf32>, tensor<32x16xf32>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %m : tensor<8x16xf32>
}

// -----

// A bf16 x bf16 -> f32 matmul (precision="bf16"): tdpbf16ps tiles, k in
// pairs (32 per tile row), B packed 2 deep: row q holds B[2q..2q+1, n].
// EXPLAIN: lowerline-amx-matmul.mlir:[[@LINE+14]]:8: remark: linalg.matmul: 4x3 by 3x2 bf16 matmul on AMX tiles (tdpbf16ps), B packed
// CHECK-LABEL: func.func @bf16_pairs(
// CHECK:         %[[B:.+]] = arith.constant dense_resource<[[PAIRS:.+\.amx]]> : tensor<16x16x2xbf16>
// CHECK:         tensor.expand_shape %{{.+}} {{\[\[}}0], [1, 2]] output_shape [16, 16, 2] : tensor<16x32xbf16> into tensor<16x16x2xbf16>
// CHECK:         linalg.generic
// CHECK-SAME:      outs(%{{.+}} : tensor<16x16xf32>)
// CHECK-SAME:      lowerline.amx_tiles
// CHECK:           arith.extf
// CHECK:           arith.mulf
// CHECK:           arith.addf
// B = [[1, 2], [3, 4], [5, 6]] in bf16 (0x3F80, 0x4000, 0x4040, ...): row 0 holds 1 3 2 4, row 1 5 0 6 0.
// CHECK:       [[PAIRS]]: "0x40000000803F404000408040{{(0000){27}0000}}A0400000C0400000{{(00)+}}"
func.func @bf16_pairs(%a: tensor<4x3xbf16>, %c: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %b = arith.constant dense_resource<b_pairs> : tensor<3x2xbf16>
  %m = linalg.matmul ins(%a, %b : tensor<4x3xbf16>, tensor<3x2xbf16>) outs(%c : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %m : tensor<4x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      b_pairs: "0x02000000803F004040408040A040C040"
    }
  }
#-}
