// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize{target=sapphirerapids})" \
// RUN:   --split-input-file | FileCheck %s
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
