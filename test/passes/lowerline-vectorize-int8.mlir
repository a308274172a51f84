// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize{target=sapphirerapids})" \
// RUN:   --split-input-file | FileCheck %s
// Without VNNI (haswell), or without a target, the tile is lowered to outer products.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=haswell},lowerline-vectorize{target=haswell})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PORTABLE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PORTABLE
// AArch64 with dot products (cortex-a76): sdot; without (cortex-a72): outer products.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=cortex-a76},lowerline-vectorize{target=cortex-a76})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NEON
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=cortex-a72},lowerline-vectorize{target=cortex-a72})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PORTABLE

// An i8 x i8 -> i32 matmul on AVX-512 VNNI: k in steps of 4; per step, B's
// 4 x 16 bytes (a whole vector of columns; the last 4 of the 20 are a peeled
// tile of their own, zero lanes past its column 4) shuffled into lane order;
// per row of A its 4 bytes as one i32, xor 0x80808080 (s8 -> u8),
// broadcast, one vpdpbusd into the row's accumulator; and one vpdpbusd of
// 0x80 bytes with B (128 * sum_k B, what reading A as u8 adds, the same for
// every row) into a correction the k loop carries, subtracted from the rows
// once after it (lowerline.passes.tiling.int8_corrections): no vpsubd per
// row and step.
// CHECK:       llvm.func @llvm.x86.avx512.vpdpbusd.512(vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK-LABEL: func.func @integer_matmul(
// CHECK-DAG:     %[[HIGH:.+]] = arith.constant -2139062144 : i32
// CHECK-DAG:     %[[BYTES:.+]] = arith.constant dense<-128> : vector<64xi8>
// CHECK-DAG:     %[[FOUR:.+]] = arith.constant 4 : index
// CHECK:         %{{.+}}:2 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[FOUR]] iter_args(%[[SUM:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (vector<16xi32>, vector<3x16xi32>)
// CHECK:           %[[B:.+]] = vector.shuffle %{{.+}}, %{{.+}} [0, 16, 32, 48, 1, 17, 33, 49, {{.*}}, 15, 31, 47, 63] : vector<64xi8>, vector<64xi8>
// CHECK-COUNT-3:   arith.xori %{{.+}}, %[[HIGH]] : i32
// CHECK-NOT:       arith.subi
// CHECK:           %[[CORR:.+]] = llvm.call @llvm.x86.avx512.vpdpbusd.512(%[[SUM]], %[[BYTES]], %[[B]])
// CHECK:           scf.yield %[[CORR]], %{{.+}} : vector<16xi32>, vector<3x16xi32>
// CHECK:         arith.subi %{{.+}}, %{{.+}} : vector<3x16xi32>
// CHECK-NOT:     vector.outerproduct
// CHECK-NOT:     arith.muli
func.func @integer_matmul(%x: tensor<3x8xi8>, %w: tensor<8x20xi8>) -> tensor<3x20xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3x20xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<3x20xi32>) -> tensor<3x20xi32>
  %mm = linalg.matmul ins(%x, %w : tensor<3x8xi8>, tensor<8x20xi8>) outs(%f : tensor<3x20xi32>) -> tensor<3x20xi32>
  return %mm : tensor<3x20xi32>
}
// On NEON, per 4 columns: B's 4 x 4 bytes shuffled into lane order, and per
// row of A its 4 bytes as one i32 broadcast to the 4 lanes, one sdot (s8 x
// s8: A as it is, no xor and no correction).
// NEON-LABEL: func.func @integer_matmul(
// NEON:         scf.for
// NEON:           vector.shuffle %{{.+}}, %{{.+}} [0, {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}, 1, {{.*}}] : vector<{{[0-9]+}}xi8>, vector<{{[0-9]+}}xi8>
// NEON-NOT:       arith.xori
// NEON:           %[[ROW:.+]] = vector.broadcast %{{.+}} : i32 to vector<4xi32>
// NEON:           %[[A:.+]] = vector.bitcast %[[ROW]] : vector<4xi32> to vector<16xi8>
// NEON:           arm_neon.intr.sdot %{{.+}}, %[[A]], %{{.+}} : vector<16xi8>, vector<16xi8> to vector<4xi32>
// NEON-NOT:       vector.outerproduct
// NEON-NOT:       arith.muli
// NEON-NOT:       arith.xori
// PORTABLE-LABEL: func.func @integer_matmul(
// PORTABLE-NOT:     vpdpbusd
// PORTABLE:         arith.muli
// PORTABLE-NOT:     vpdpbusd

// -----

// An i8 x i8 -> i32 batch matmul (lowerline-fold-qdq-batch-matmul's, neither
// operand a constant): k in steps of 4 too; each register tile, a batch of
// one, is taken as its matrix (a shape_cast, lowered away here), B's bytes shuffled into lane
// order with the 0x80 correction carried by the k loop and subtracted after
// it, as for a matmul by a non-constant B. k = 10: the last step is partial,
// read with zero padding.
// CHECK-LABEL: func.func @integer_batch_matmul(
// CHECK:         scf.forall
// CHECK:           %{{.+}}:2 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[SUM:.+]] = %{{.+}}, %{{.+}} = %{{.+}}) -> (vector<16xi32>, vector<1x{{[0-9]+}}x16xi32>)
// CHECK:             llvm.call @llvm.x86.avx512.vpdpbusd.512
// CHECK-NOT:         arith.subi
// CHECK:             %[[CORR:.+]] = llvm.call @llvm.x86.avx512.vpdpbusd.512(%[[SUM]], %{{.+}}, %{{.+}})
// CHECK:             scf.yield %[[CORR]], %{{.+}} : vector<16xi32>, vector<1x5x16xi32>
// CHECK:           arith.subi %{{.+}}, %{{.+}} : vector<5x16xi32>
// CHECK-NOT:       vector.outerproduct
// NEON-LABEL: func.func @integer_batch_matmul(
// NEON:         arm_neon.intr.sdot
// NEON-NOT:     arith.xori
// PORTABLE-LABEL: func.func @integer_batch_matmul(
// PORTABLE-NOT:     vpdpbusd
// PORTABLE-NOT:     arm_neon.intr.sdot
func.func @integer_batch_matmul(%x: tensor<3x5x10xi8>, %y: tensor<3x10x16xi8>) -> tensor<3x5x16xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3x5x16xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<3x5x16xi32>) -> tensor<3x5x16xi32>
  %bm = linalg.batch_matmul ins(%x, %y : tensor<3x5x10xi8>, tensor<3x10x16xi8>) outs(%f : tensor<3x5x16xi32>) -> tensor<3x5x16xi32>
  return %bm : tensor<3x5x16xi32>
}

// -----

// A float matmul keeps its FMAs on the same target.
// CHECK-LABEL: func.func @float_matmul(
// CHECK-NOT:     vpdpbusd
// CHECK:         vector.fma
// CHECK-NOT:     vpdpbusd
func.func @float_matmul(%x: tensor<3x8xf32>, %w: tensor<8x20xf32>) -> tensor<3x20xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x20xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x20xf32>) -> tensor<3x20xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<3x8xf32>, tensor<8x20xf32>) outs(%f : tensor<3x20xf32>) -> tensor<3x20xf32>
  return %mm : tensor<3x20xf32>
}

// -----

// A float batch matmul on the same target: no dot product.
// CHECK-LABEL: func.func @float_batch_matmul(
// CHECK-NOT:     vpdpbusd
// CHECK:         vector.fma
// CHECK-NOT:     vpdpbusd
func.func @float_batch_matmul(%x: tensor<3x5x10xf32>, %y: tensor<3x10x16xf32>) -> tensor<3x5x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5x16xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x5x16xf32>) -> tensor<3x5x16xf32>
  %bm = linalg.batch_matmul ins(%x, %y : tensor<3x5x10xf32>, tensor<3x10x16xf32>) outs(%f : tensor<3x5x16xf32>) -> tensor<3x5x16xf32>
  return %bm : tensor<3x5x16xf32>
}
