// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize{target=sapphirerapids})" \
// RUN:   --split-input-file | FileCheck %s
// A constant weight, packed into panels by lowerline-pack-weights first.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},func.func(lowerline-pack-weights),lowerline-vectorize{target=sapphirerapids},canonicalize)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PACKED
// Without AVX512-BF16 (haswell), or without a target, bf16 is widened to f32 and FMA'd.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=haswell},lowerline-vectorize{target=haswell})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PORTABLE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PORTABLE

// A bf16 x bf16 -> f32 matmul on AVX512-BF16: k in steps of 2; per step, B's
// 2 x 16 values interleaved into pairs (one shuffle, zero lanes past the
// peeled tile's 4 columns), and per row of A its pair as one i32, broadcast,
// one vdpbf16ps into the row's accumulator.
// CHECK-LABEL: func.func @bf16_matmul(
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}}) -> (vector<3x16xf32>)
// CHECK:           %[[B:.+]] = vector.shuffle %{{.+}}, %{{.+}} [0, 16, 1, 17, 2, 18, {{.*}}, 15, 31] : vector<32xbf16>, vector<32xbf16>
// CHECK:           %[[A:.+]] = vector.bitcast %{{.+}} : vector<16xi32> to vector<32xbf16>
// CHECK:           x86vector.avx512.dot %{{.+}}, %[[A]], %[[B]] : vector<32xbf16> -> vector<16xf32>
// CHECK-COUNT-2:   x86vector.avx512.dot
// CHECK-NOT:       vector.fma
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}}) -> (vector<3x4xf32>)
// CHECK:           vector.shuffle %{{.+}}, %{{.+}} [0, 4, 1, 5, 2, 6, 3, 7, 8, 8, {{.*}}] : vector<8xbf16>, vector<8xbf16>
// CHECK-COUNT-3:   x86vector.avx512.dot
// CHECK-NOT:       vector.fma
// CHECK:         return
func.func @bf16_matmul(%x: tensor<3x8xbf16>, %w: tensor<8x20xbf16>) -> tensor<3x20xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x20xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x20xf32>) -> tensor<3x20xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<3x8xbf16>, tensor<8x20xbf16>) outs(%f : tensor<3x20xf32>) -> tensor<3x20xf32>
  return %mm : tensor<3x20xf32>
}
// Widened instead: B's row as a vector, A's column lane by lane (a
// vector<3xbf16> would be built through the stack on AVX2).
// PORTABLE-LABEL: func.func @bf16_matmul(
// PORTABLE-NOT:     x86vector
// PORTABLE-NOT:     arith.extf %{{.+}} : vector<3xbf16>
// PORTABLE:         arith.extf %{{.+}} : vector<{{[0-9]+}}xbf16> to vector<{{[0-9]+}}xf32>
// PORTABLE-COUNT-3: arith.extf %{{.+}} : bf16 to f32
// PORTABLE:         vector.fma
// PORTABLE-NOT:     x86vector
// PORTABLE-NOT:     arith.extf %{{.+}} : vector<3xbf16>

// -----

// An odd k: the last step's pair is masked, read with zero padding (its
// second product is 0 * 0), so it still becomes vdpbf16ps.
// CHECK-LABEL: func.func @odd_k(
// CHECK:         vector.transfer_read %{{.+}}, %{{.+}}, %{{.+}} {in_bounds = [true, true]} : tensor<3x?xbf16>, vector<3x2xbf16>
// CHECK:         x86vector.avx512.dot
// CHECK-NOT:     vector.contract
func.func @odd_k(%x: tensor<3x7xbf16>, %w: tensor<7x16xbf16>) -> tensor<3x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x16xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x16xf32>) -> tensor<3x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<3x7xbf16>, tensor<7x16xbf16>) outs(%f : tensor<3x16xf32>) -> tensor<3x16xf32>
  return %mm : tensor<3x16xf32>
}

// -----

// An f32 matmul keeps its FMAs on the same target.
// CHECK-LABEL: func.func @float_matmul(
// CHECK-NOT:     x86vector
// CHECK:         vector.fma
// CHECK-NOT:     x86vector
func.func @float_matmul(%x: tensor<3x8xf32>, %w: tensor<8x20xf32>) -> tensor<3x20xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x20xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x20xf32>) -> tensor<3x20xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<3x8xf32>, tensor<8x20xf32>) outs(%f : tensor<3x20xf32>) -> tensor<3x20xf32>
  return %mm : tensor<3x20xf32>
}

// -----

// A constant weight: its panels (lowerline-pack-weights) are packed once
// more, each pair of k rows interleaved (panels x K/2 x 2*32), so each step
// of k reads the pairs of 16 columns as one vector, with no shuffle. B[k, n]
// is k: the first row of pairs is (0, 1) 32 times, the next (2, 3).
// CHECK-LABEL:  func.func @packed_weight_pairs(
// PACKED-LABEL: func.func @packed_weight_pairs(
// PACKED:         %[[PAIRS:.+]] = arith.constant dense_resource<{{.+}}.pairs> : tensor<2x4x64xbf16>
// PACKED:         scf.for
// PACKED:           %[[HALF:.+]] = arith.divui %{{.+}}, %{{.+}} : index
// PACKED:           vector.transfer_read %[[PAIRS]][%{{.+}}, %[[HALF]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x4x64xbf16>, vector<32xbf16>
// PACKED-NOT:       vector.shuffle {{.+}} : vector<{{[0-9]+}}xbf16>
// PACKED:           x86vector.avx512.dot
// PACKED:         return
// PACKED:       dialect_resources
// PACKED:         weight.p32.pairs: "0x40000000{{(0000803F){32}(00404040){32}()}}
func.func @packed_weight_pairs(%x: tensor<3x8xbf16>) -> tensor<3x64xf32> {
  %w = arith.constant dense_resource<weight> : tensor<8x64xbf16>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x64xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x64xf32>) -> tensor<3x64xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<3x8xbf16>, tensor<8x64xbf16>) outs(%f : tensor<3x64xf32>) -> tensor<3x64xf32>
  return %mm : tensor<3x64xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weight: "0x020000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F803F004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004000400040004040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040404040408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040804080408040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040A040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040C040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040E040"
    }
  }
#-}
