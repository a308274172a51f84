// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --input-file=%t.remarks --check-prefix=EXPLAIN
// Without an int8 dot product (haswell: no VNNI), k steps of 1 (outer products).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=haswell})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PORTABLE

// The i8 x i8 -> i32 matmul of lowerline-fold-qdq-matmul is a fusion root
// like a float matmul, planned as its i32 accumulator: the fill and the
// requantize epilogue join its nest, register tiles of 8x16 i32 lanes; the
// partial tile of the last 13 columns is peeled, as a float matmul's.
// EXPLAIN: remark: linalg.matmul: g0: matmul; fused fill, linalg.generic; tiles: parallel 8x29, registers 8x16
// CHECK-LABEL: func.func @tiles_integer_matmul_with_epilogue(
// CHECK:         scf.forall
// CHECK:           linalg.fill {lowerline.vector_sizes = array<i64: 8, 16>} {{.*}} -> tensor<8x16xi32>
// CHECK:           linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 16, 4>} ins(%{{.+}}, %{{.+}} : tensor<8x?xi8>, tensor<?x16xi8>)
// CHECK:           linalg.fill {lowerline.vector_sizes = array<i64: 8, 16>} {{.*}} -> tensor<8x13xi32>
// CHECK:           linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 16, 4>} ins(%{{.+}}, %{{.+}} : tensor<8x?xi8>, tensor<?x13xi8>)
// PORTABLE-LABEL: func.func @tiles_integer_matmul_with_epilogue(
// PORTABLE:         linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 4, 16, 1>} ins(%{{.+}}, %{{.+}} : tensor<4x1xi8>, tensor<1x16xi8>)
// CHECK:           linalg.generic
// CHECK:             math.roundeven
// CHECK:             arith.fptosi
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @tiles_integer_matmul_with_epilogue(%x: tensor<8x37xi8>, %w: tensor<37x29xi8>, %m: tensor<29xf32>) -> tensor<8x29xi8> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8x29xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<8x29xi32>) -> tensor<8x29xi32>
  %mm = linalg.matmul ins(%x, %w : tensor<8x37xi8>, tensor<37x29xi8>) outs(%f : tensor<8x29xi32>) -> tensor<8x29xi32>
  %e2 = tensor.empty() : tensor<8x29xi8>
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %m : tensor<8x29xi32>, tensor<29xf32>) outs(%e2 : tensor<8x29xi8>) {
  ^bb0(%a: i32, %s: f32, %o: i8):
    %0 = arith.sitofp %a : i32 to f32
    %1 = arith.mulf %0, %s : f32
    %2 = math.roundeven %1 : f32
    %3 = arith.fptosi %2 : f32 to i8
    linalg.yield %3 : i8
  } -> tensor<8x29xi8>
  return %r : tensor<8x29xi8>
}

// -----

// A mixed contraction other than i8 x i8 -> i32 is still refused.
// EXPLAIN: remark: linalg.matmul: left as loops: mixed or unsupported element types
// CHECK-LABEL: func.func @keeps_i16_accumulator(
// CHECK-NOT:     scf.forall
// CHECK:         linalg.matmul ins
func.func @keeps_i16_accumulator(%x: tensor<4x4xi8>, %w: tensor<4x4xi8>) -> tensor<4x4xi16> {
  %c0 = arith.constant 0 : i16
  %e = tensor.empty() : tensor<4x4xi16>
  %f = linalg.fill ins(%c0 : i16) outs(%e : tensor<4x4xi16>) -> tensor<4x4xi16>
  %mm = linalg.matmul ins(%x, %w : tensor<4x4xi8>, tensor<4x4xi8>) outs(%f : tensor<4x4xi16>) -> tensor<4x4xi16>
  return %mm : tensor<4x4xi16>
}
