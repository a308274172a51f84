// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},func.func(lowerline-pack-weights),lowerline-vectorize{target=sapphirerapids},canonicalize)" \
// RUN:   --split-input-file | FileCheck %s

// A constant int8 B (K = 6, N = 20: neither a multiple of 4 nor of 16) is
// stored at compile time as vpdpbusd reads it, [ceil(K / 4), 4 * N]: lane n
// of step q holds B[4q..4q+3, n], zero past K; next to it the i32 sums
// 128 * (B[4q, n] + .. + B[4q + 3, n]). Each step of k loads 64 bytes of B
// and 16 sums as they are: no shuffle of B, no vpdpbusd of 0x80 bytes.
// The 16-column tile reads in bounds; the peeled 4-column one past the end
// of its row (padding zero lanes).
// CHECK-LABEL: func.func @constant_weight(
// CHECK-DAG:     %[[B:.+]] = arith.constant dense_resource<[[BYTES:lowerline_weight[0-9]+\.vnni]]> : tensor<2x80xi8>
// CHECK-DAG:     %[[S:.+]] = arith.constant dense_resource<[[SUMS:lowerline_weight[0-9]+\.vnni_sums]]> : tensor<2x20xi32>
// CHECK:         scf.for
// CHECK:           %[[Q:.+]] = affine.apply
// CHECK:           %[[W:.+]] = vector.transfer_read %[[B]][%[[Q]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x80xi8>, vector<64xi8>
// CHECK-NEXT:      %[[C:.+]] = vector.transfer_read %[[S]][%[[Q]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x20xi32>, vector<16xi32>
// CHECK-NOT:       vector.shuffle %{{.+}} [0, 16, 32, 48
// CHECK-COUNT-3:   llvm.call @llvm.x86.avx512.vpdpbusd.512(%{{.+}}, %{{.+}}, %[[W]])
// CHECK:         scf.for
// CHECK:           vector.transfer_read %[[B]][%{{.+}}, %c64], %{{.+}} : tensor<2x80xi8>, vector<64xi8>
// CHECK:           vector.transfer_read %[[S]][%{{.+}}, %c16], %{{.+}} : tensor<2x20xi32>, vector<16xi32>
// CHECK-NOT:       vector.shuffle %{{.+}} [0, 16, 32, 48
// CHECK:       dialect_resources
// CHECK:         [[BYTES]]: "0x40000000
// CHECK-SAME:      {{(01020304){19}()}}FFFEFDFC{{(05060000){19}()}}FBFA0000"
// CHECK:         [[SUMS]]: "0x40000000
// CHECK-SAME:      {{(00050000){19}()}}00FBFFFF{{(80050000){19}()}}80FAFFFF"
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
