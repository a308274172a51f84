// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},func.func(lowerline-pack-weights),lowerline-vectorize{target=sapphirerapids},canonicalize)" \
// RUN:   --split-input-file | FileCheck %s

// A constant int8 B (K = 6, N = 20: neither a multiple of 4 nor of 16) is
// stored at compile time as vpdpbusd reads it, [ceil(K / 4), 4 * N]: lane n
// of step q holds B[4q..4q+3, n], zero past K. Each step of k loads 64
// bytes of B as they are: no shuffle of B, no vpdpbusd of 0x80 bytes. What
// reading A as u8 adds over the whole k loop, 128 * sum_k B[k, n], is a
// constant next to it (128 * 21 = 0xA80 in the first 19 columns, -0xA80 in
// the last), subtracted once from the fill's zeros before each loop
// (lowerline.passes.tiling.int8_corrections), not per step and row. The
// 16-column tile reads in bounds; the peeled 4-column one past the end of
// its row (padding zero lanes).
// CHECK-LABEL: func.func @constant_weight(
// CHECK-DAG:     %[[B:.+]] = arith.constant dense_resource<[[BYTES:lowerline_weight[0-9]+\.vnni]]> : tensor<2x80xi8>
// CHECK-DAG:     %[[T:.+]] = arith.constant dense_resource<[[TOTALS:lowerline_weight[0-9]+\.vnni_totals0_1_2]]> : tensor<20xi32>
// CHECK:         %[[T0:.+]] = vector.transfer_read %[[T]][%{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<20xi32>, vector<16xi32>
// CHECK:         arith.subi %{{.+}}, %{{.+}} : vector<3x16xi32>
// CHECK:         scf.for
// CHECK:           %[[Q:.+]] = affine.apply
// CHECK:           %[[W:.+]] = vector.transfer_read %[[B]][%[[Q]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x80xi8>, vector<64xi8>
// CHECK-NOT:       vector.shuffle %{{.+}} [0, 16, 32, 48
// CHECK-NOT:       arith.subi
// CHECK-COUNT-3:   llvm.call @llvm.x86.avx512.vpdpbusd.512(%{{.+}}, %{{.+}}, %[[W]])
// CHECK-NOT:       arith.subi
// CHECK:           scf.yield
// CHECK:         vector.transfer_read %[[T]][%c16], %{{.+}} : tensor<20xi32>, vector<16xi32>
// CHECK:         arith.subi %{{.+}}, %{{.+}} : vector<3x4xi32>
// CHECK:         scf.for
// CHECK:           vector.transfer_read %[[B]][%{{.+}}, %c64], %{{.+}} : tensor<2x80xi8>, vector<64xi8>
// CHECK-NOT:       vector.shuffle %{{.+}} [0, 16, 32, 48
// CHECK-NOT:       arith.subi
// CHECK:           scf.yield
// CHECK:       dialect_resources
// CHECK:         [[BYTES]]: "0x40000000
// CHECK-SAME:      {{(01020304){19}()}}FFFEFDFC{{(05060000){19}()}}FBFA0000"
// CHECK:         [[TOTALS]]: "0x40000000
// CHECK-SAME:      {{(800A0000){19}()}}80F5FFFF"
func.func @constant_weight(%x: tensor<3x6xi8>) -> tensor<3x20xi32> {
  %w = arith.constant dense<[[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1],
                             [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, -2],
                             [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, -3],
                             [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, -4],
                             [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, -5],
                             [6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, -6]]> : tensor<6x20xi8>
  %zero = arith.constant 0 : i32
  %init = tensor.empty() : tensor<3x20xi32>
  %fill = linalg.fill ins(%zero : i32) outs(%init : tensor<3x20xi32>) -> tensor<3x20xi32>
  %mm = linalg.matmul ins(%x, %w : tensor<3x6xi8>, tensor<6x20xi8>) outs(%fill : tensor<3x20xi32>) -> tensor<3x20xi32>
  return %mm : tensor<3x20xi32>
}

// -----

// Partial tiles (13 rows: 8 + 5; 29 columns: 16 + 13) start from masked
// fills: corrected at the start as well, in all four tiles, by
// 128 * 9 * -2 = -0x900 per column.
// CHECK-LABEL: func.func @partial_tiles(
// CHECK:         arith.subi %{{.+}}, %{{.+}} : vector<8x16xi32>
// CHECK:         scf.for
// CHECK-NOT:       arith.subi
// CHECK:           scf.yield
// CHECK:         arith.subi %{{.+}}, %{{.+}} : vector<8x16xi32>
// CHECK:         scf.for
// CHECK-NOT:       arith.subi
// CHECK:           scf.yield
// CHECK:         arith.subi %{{.+}}, %{{.+}} : vector<8x16xi32>
// CHECK:         scf.for
// CHECK-NOT:       arith.subi
// CHECK:           scf.yield
// CHECK:         arith.subi %{{.+}}, %{{.+}} : vector<8x16xi32>
// CHECK:         scf.for
// CHECK-NOT:       arith.subi
// CHECK:           scf.yield
// CHECK:       dialect_resources
// CHECK:         vnni_totals0_2_3: "0x40000000{{(00F7FFFF){13}()}}"
func.func @partial_tiles(%x: tensor<13x9xi8>) -> tensor<13x29xi32> {
  %w = arith.constant dense<-2> : tensor<9x29xi8>
  %zero = arith.constant 0 : i32
  %init = tensor.empty() : tensor<13x29xi32>
  %fill = linalg.fill ins(%zero : i32) outs(%init : tensor<13x29xi32>) -> tensor<13x29xi32>
  %mm = linalg.matmul ins(%x, %w : tensor<13x9xi8>, tensor<9x29xi8>) outs(%fill : tensor<13x29xi32>) -> tensor<13x29xi32>
  return %mm : tensor<13x29xi32>
}

// -----

// Not packed: a B that is not a constant (an argument) is shuffled into
// lane order every step, and its sums computed with a vpdpbusd of 0x80 bytes.
// CHECK-LABEL: func.func @argument_weight(
// CHECK-NOT:     vnni
// CHECK:         scf.for
// CHECK:           vector.shuffle %{{.+}}, %{{.+}} [0, 16, 32, 48
// CHECK:           llvm.call @llvm.x86.avx512.vpdpbusd.512(%{{.+}}, %{{.+}}, %{{.+}})
func.func @argument_weight(%x: tensor<3x8xi8>, %w: tensor<8x20xi8>) -> tensor<3x20xi32> {
  %zero = arith.constant 0 : i32
  %init = tensor.empty() : tensor<3x20xi32>
  %fill = linalg.fill ins(%zero : i32) outs(%init : tensor<3x20xi32>) -> tensor<3x20xi32>
  %mm = linalg.matmul ins(%x, %w : tensor<3x8xi8>, tensor<8x20xi8>) outs(%fill : tensor<3x20xi32>) -> tensor<3x20xi32>
  return %mm : tensor<3x20xi32>
}

// -----

// Not corrected at the start: a matmul accumulating into an argument (no
// fill fused into its tiles, so no whole write the k loop starts from)
// subtracts each step's sums 128 * (B[k, n] + .. + B[k + 3, n]), loaded
// next to the packed B (128 * 4 * 3 = 0x600 per column).
// CHECK-LABEL: func.func @accumulates_into_argument(
// CHECK-DAG:     %[[S:.+]] = arith.constant dense_resource<[[SUMS:lowerline_weight[0-9]+\.vnni_sums]]> : tensor<2x16xi32>
// CHECK-NOT:     vnni_totals
// CHECK:         scf.for
// CHECK:           %[[C:.+]] = vector.transfer_read %[[S]][%{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x16xi32>, vector<16xi32>
// CHECK-COUNT-3:   arith.subi %{{.+}}, %[[C]] : vector<16xi32>
// CHECK:       dialect_resources
// CHECK:         [[SUMS]]: "0x40000000
// CHECK-SAME:      {{(00060000){32}()}}"
func.func @accumulates_into_argument(%x: tensor<3x8xi8>, %acc: tensor<3x20xi32>) -> tensor<3x20xi32> {
  %w = arith.constant dense<3> : tensor<8x20xi8>
  %mm = linalg.matmul ins(%x, %w : tensor<3x8xi8>, tensor<8x20xi8>) outs(%acc : tensor<3x20xi32>) -> tensor<3x20xi32>
  return %mm : tensor<3x20xi32>
}
