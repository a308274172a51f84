// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t.spr | FileCheck %s
// RUN: FileCheck %s --input-file=%t.spr --check-prefix=EXPLAIN-SPR
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=haswell explain})" \
// RUN:   --split-input-file 2>%t.hsw >/dev/null
// RUN: FileCheck %s --input-file=%t.hsw --check-prefix=EXPLAIN-HSW
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=neoverse-n1 explain})" \
// RUN:   --split-input-file 2>%t.n1 >/dev/null
// RUN: FileCheck %s --input-file=%t.n1 --check-prefix=EXPLAIN-N1

// Register tiles are whole vectors along n. 196 columns have no divisor in
// whole vectors: 32 (16 on haswell) columns and a partial tile, not the
// divisor 28, whose 28-lane vectors LLVM splits lane by lane. The partial
// tile is peeled: the full ones keep static shapes through the k loop (their
// accumulators are hoisted into registers), the last is 4 columns wide.
// The columns split into no whole register tiles: the rows are split into
// one parallel tile per core instead (2 on sapphirerapids, 4 on haswell).
// EXPLAIN-SPR: remark: linalg.matmul: g0: matmul; fused fill; tiles: parallel 64x196, registers 8x32, masked, k loop of 1
// EXPLAIN-HSW: remark: linalg.matmul: g0: matmul; fused fill; tiles: parallel 32x196, registers 4x16, masked, k loop of 1
// AArch64's 32 NEON registers of 4 lanes: 8 rows of 2 vectors (haswell's 16
// registers of 8 lanes give 4 rows of 2 vectors).
// EXPLAIN-N1: remark: linalg.matmul: g0: matmul; fused fill; tiles: parallel 32x196, registers 8x8, masked, k loop of 1
// CHECK-LABEL: func.func @whole_vector_columns_for_196(
// CHECK:         scf.forall
// CHECK:           scf.for %{{.+}} = %{{.+}} to %c192 step %c32
// CHECK:             scf.for {{.+}} -> (tensor<8x32xf32>)
// CHECK:               linalg.matmul {{.+}} -> tensor<8x32xf32>
// CHECK:           scf.for {{.+}} -> (tensor<8x4xf32>)
// CHECK:             linalg.matmul {{.+}} -> tensor<8x4xf32>
// CHECK-NOT:     {{x\?x}}
// CHECK:         return
func.func @whole_vector_columns_for_196(%a: tensor<128x64xf32>, %b: tensor<64x196xf32>) -> tensor<128x196xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x196xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x196xf32>) -> tensor<128x196xf32>
  %c = linalg.matmul ins(%a, %b : tensor<128x64xf32>, tensor<64x196xf32>) outs(%f : tensor<128x196xf32>) -> tensor<128x196xf32>
  return %c : tensor<128x196xf32>
}

// -----

// Not changed: 192 columns are 6 whole vectors of 32, no mask.
// EXPLAIN-SPR: remark: linalg.matmul: g0: matmul; fused fill; tiles: parallel 128x96, registers 8x32, k loop of 1
// CHECK-LABEL: func.func @divisor_in_whole_vectors_for_192(
// CHECK:           linalg.matmul {{.+}} -> tensor<8x32xf32>
func.func @divisor_in_whole_vectors_for_192(%a: tensor<128x64xf32>, %b: tensor<64x192xf32>) -> tensor<128x192xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x192xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x192xf32>) -> tensor<128x192xf32>
  %c = linalg.matmul ins(%a, %b : tensor<128x64xf32>, tensor<64x192xf32>) outs(%f : tensor<128x192xf32>) -> tensor<128x192xf32>
  return %c : tensor<128x192xf32>
}

// -----

// A batch matmul's batch entries are parallel tiles already: 65 columns
// stay one parallel tile (halving gave 32: a partial parallel tile, every
// register tile of it dynamic). The last column is a peeled tile of its own.
// EXPLAIN-SPR: remark: linalg.batch_matmul: g0: batch_matmul; fused fill; tiles: parallel 65x65, registers 5x32, masked, k loop of 1
// CHECK-LABEL: func.func @batch_entries_are_the_parallel_tiles(
// CHECK:         scf.forall {{.+}} in (24, 1, 1)
// CHECK:             linalg.batch_matmul {{.+}} -> tensor<1x5x32xf32>
// CHECK:           linalg.batch_matmul {{.+}} -> tensor<1x5x1xf32>
// CHECK-NOT:     {{x\?x}}
// CHECK:         return
func.func @batch_entries_are_the_parallel_tiles(%a: tensor<24x65x64xf32>, %b: tensor<24x64x65xf32>) -> tensor<24x65x65xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<24x65x65xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<24x65x65xf32>) -> tensor<24x65x65xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<24x65x64xf32>, tensor<24x64x65xf32>) outs(%f : tensor<24x65x65xf32>) -> tensor<24x65x65xf32>
  return %c : tensor<24x65x65xf32>
}

// -----

// A row vector (one row: a recurrent cell's step at batch 1) spends the
// registers along n, in a power-of-two number of vectors: 384 columns are
// 3 tiles of 128, not 2 of 192, whose 12-register accumulator LLVM split
// lane by lane through the stack at every k step (3x slower).
// EXPLAIN-SPR: remark: linalg.matmul: g0: matmul; fused fill; tiles: parallel 1x128, registers 1x128, k loop of 1
// CHECK-LABEL: func.func @row_vector_in_power_of_two_vectors(
// CHECK:         scf.forall {{.+}} in (1, 3)
// CHECK:             scf.for {{.+}} -> (tensor<1x128xf32>)
// CHECK:               linalg.matmul {{.+}} -> tensor<1x128xf32>
// CHECK-NOT:     tensor<1x192xf32>
// CHECK:         return
func.func @row_vector_in_power_of_two_vectors(%a: tensor<1x128xf32>, %b: tensor<128x384xf32>) -> tensor<1x384xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x384xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x384xf32>) -> tensor<1x384xf32>
  %c = linalg.matmul ins(%a, %b : tensor<1x128xf32>, tensor<128x384xf32>) outs(%f : tensor<1x384xf32>) -> tensor<1x384xf32>
  return %c : tensor<1x384xf32>
}

// -----

// Not changed: 512 columns are 2 tiles of 256 (16 vectors, half of the
// registers), already a power of two.
// EXPLAIN-SPR: remark: linalg.matmul: g0: matmul; fused fill; tiles: parallel 1x256, registers 1x256, k loop of 1
// CHECK-LABEL: func.func @row_vector_of_sixteen_vectors(
// CHECK:         scf.forall {{.+}} in (1, 2)
// CHECK:               linalg.matmul {{.+}} -> tensor<1x256xf32>
func.func @row_vector_of_sixteen_vectors(%a: tensor<1x128xf32>, %b: tensor<128x512xf32>) -> tensor<1x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x512xf32>) -> tensor<1x512xf32>
  %c = linalg.matmul ins(%a, %b : tensor<1x128xf32>, tensor<128x512xf32>) outs(%f : tensor<1x512xf32>) -> tensor<1x512xf32>
  return %c : tensor<1x512xf32>
}
