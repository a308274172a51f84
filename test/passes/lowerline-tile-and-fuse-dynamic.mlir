// Attention over a dynamic sequence length (lowerline.compile(...,
// dynamic=...)): batch matmuls with dynamic M, N and K and a softmax over a
// dynamic innermost dim are tiled with static register tiles and vectors,
// the partial last ones peeled (a row's partial last tile in register-wide
// steps); an op whose dynamic dim is an outer
// reduced one stays loops, with a remark.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t | FileCheck %s
// RUN: FileCheck %s --input-file=%t --check-prefix=EXPLAIN

// QK^T: M and N dynamic. A forall over (batch, row tiles, column tiles);
// full 8x32 register tiles, then the peeled partial column tile; the rows
// left (fewer than 8) as static pieces of 4, 2 and 1 rows, each with its
// full and its peeled partial column tiles, never a masked 8-row tile; the
// k loop (K = 16) steps by 1.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse-dynamic.mlir:[[@LINE+24]]:8: remark: linalg.batch_matmul: g0: batch_matmul; fused fill; tiles: parallel 64x64, registers 8x32, masked, k loop of 1;
// EXPLAIN-NOT:      left as loops

// CHECK-LABEL: func.func @qk_dynamic_m_n(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (8, %{{.+}}, %{{.+}})
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               linalg.fill {{.+}} outs(%{{.+}} : tensor<1x8x32xf32>)
// CHECK:               scf.for %{{.+}} = %{{.+}} to %c16 step %c1
// CHECK:                 linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x8x1xf32>, tensor<1x1x32xf32>) outs(%{{.+}} : tensor<1x8x32xf32>)
// CHECK:             scf.for
// CHECK:                 linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x8x1xf32>, tensor<1x1x?xf32>) outs(%{{.+}} : tensor<1x8x?xf32>)
// CHECK:                 linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x4x1xf32>, tensor<1x1x32xf32>) outs(%{{.+}} : tensor<1x4x32xf32>)
// CHECK:                 linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x4x1xf32>, tensor<1x1x?xf32>) outs(%{{.+}} : tensor<1x4x?xf32>)
// CHECK:                 linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x2x1xf32>, tensor<1x1x32xf32>) outs(%{{.+}} : tensor<1x2x32xf32>)
// CHECK:                 linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x2x1xf32>, tensor<1x1x?xf32>) outs(%{{.+}} : tensor<1x2x?xf32>)
// CHECK:                 linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x1x1xf32>, tensor<1x1x32xf32>) outs(%{{.+}} : tensor<1x1x32xf32>)
// CHECK:                 linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x1x1xf32>, tensor<1x1x?xf32>) outs(%{{.+}} : tensor<1x1x?xf32>)
// CHECK-NOT:             linalg.batch_matmul {{.+}} : tensor<1x?x1xf32>
// CHECK:         return
func.func @qk_dynamic_m_n(%q: tensor<8x?x16xf32>, %k: tensor<8x16x?xf32>, %s: index) -> tensor<8x?x?xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%s, %s) : tensor<8x?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x?x?xf32>) -> tensor<8x?x?xf32>
  %r = linalg.batch_matmul ins(%q, %k : tensor<8x?x16xf32>, tensor<8x16x?xf32>) outs(%f : tensor<8x?x?xf32>) -> tensor<8x?x?xf32>
  return %r : tensor<8x?x?xf32>
}

// -----

// softmax(QK^T) V: M and K dynamic; the k loop runs to the dynamic K.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse-dynamic.mlir:[[@LINE+13]]:8: remark: linalg.batch_matmul: g0: batch_matmul; fused fill; tiles: parallel 64x16, registers 8x16, masked, k loop of 1;
// EXPLAIN-NOT:      left as loops

// CHECK-LABEL: func.func @pv_dynamic_m_k(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<8x?x?xf32>
// CHECK:         %[[K:.+]] = tensor.dim %[[P]], %c2
// CHECK:         scf.forall
// CHECK:             scf.for %{{.+}} = %{{.+}} to %[[K]] step %c1
// CHECK:               linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x8x1xf32>, tensor<1x1x16xf32>) outs(%{{.+}} : tensor<1x8x16xf32>)
func.func @pv_dynamic_m_k(%p: tensor<8x?x?xf32>, %v: tensor<8x?x16xf32>, %s: index) -> tensor<8x?x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%s) : tensor<8x?x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x?x16xf32>) -> tensor<8x?x16xf32>
  %r = linalg.batch_matmul ins(%p, %v : tensor<8x?x?xf32>, tensor<8x?x16xf32>) outs(%f : tensor<8x?x16xf32>) -> tensor<8x?x16xf32>
  return %r : tensor<8x?x16xf32>
}

// -----

// A softmax over a dynamic innermost dim (and dynamic rows): the max and the
// sum are reduced a row at a time in chunks of one register (16 lanes:
// a short row, 17 keys, is one whole chunk and the peeled partial one; a
// chunk of 64 would be all partial), exp and the division in tiles of 64
// along the row, the partial last tile peeled and run in register-wide
// masked steps (not one 64-lane masked tile). The sum's kept unit dim
// (2x4x?x1) is collapsed away first, dynamic rows and all.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     remark: linalg.fill: g0: vector tile [1, 1, 64]
// EXPLAIN-NEXT:     remark: linalg.generic: g1: vector tile [1, 1, 1, 0], reduced in chunks [0, 0, 0, 16]
// EXPLAIN-NEXT:     remark: linalg.generic: g2: vector tile [1, 1, 1, 64]
// EXPLAIN-NEXT:     remark: linalg.fill: g3: vector tile [1, 1, 1, 1]
// EXPLAIN-NEXT:     remark: linalg.generic: g4: vector tile [1, 1, 1, 0], reduced in chunks [0, 0, 0, 16]
// EXPLAIN-NEXT:     remark: linalg.generic: g5: vector tile [1, 1, 1, 64]
// EXPLAIN-NOT:      left as loops

// CHECK-LABEL: func.func @softmax_dynamic_row(
// The row maxima's fill: whole tiles, then the partial one in masked vectors.
// CHECK:         scf.for {{.+}} step %c64
// CHECK:           linalg.fill {{.+}}vector_sizes = array<i64: 1, 1, 64>{{.+}} -> tensor<1x1x64xf32>
// CHECK:         scf.for {{.+}} step %c64
// CHECK:           scf.for {{.+}} step %c16
// CHECK:             linalg.fill {{.+}}vector_sizes = array<i64: 1, 1, 16>{{.+}} -> tensor<1x1x?xf32>
// The max: full chunks into 16 partial maxima, the peeled last chunk, one merge.
// CHECK:         linalg.fill {{.+}}vector_sizes = array<i64: 1, 1, 1, 16>{{.+}} -> tensor<1x1x1x16xf32>
// CHECK:         scf.for
// CHECK:           linalg.generic {{.+}}vector_sizes = array<i64: 1, 1, 1, 16>
// CHECK:         scf.for
// CHECK:           linalg.generic {{.+}}vector_sizes = array<i64: 1, 1, 1, 16>
// CHECK:         linalg.reduce ins(%{{.+}} : tensor<1x1x1x16xf32>)
// exp(x - max): whole tiles of 64, then the peeled partial tile in steps of 16.
// CHECK:         scf.for {{.+}} step %c64
// CHECK:           linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x1x1x64xf32>, tensor<1x1x1xf32>)
// CHECK:         scf.for {{.+}} step %c64
// CHECK:           scf.for {{.+}} step %c16
// CHECK:             linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x1x1x?xf32>, tensor<1x1x1xf32>) {{.+}}vector_sizes = array<i64: 1, 1, 1, 16>
// The sum, then the division.
// CHECK:         linalg.reduce ins(%{{.+}} : tensor<1x1x1x16xf32>)
// CHECK:         linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x1x1x64xf32>, tensor<1x1x1x1xf32>)
// CHECK:         scf.for {{.+}} step %c16
// CHECK:           linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x1x1x?xf32>, tensor<1x1x1x1xf32>) {{.+}}vector_sizes = array<i64: 1, 1, 1, 16>
#m3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#m4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#m5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
func.func @softmax_dynamic_row(%x: tensor<2x4x?x?xf32>, %s: index) -> tensor<2x4x?x?xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty(%s) : tensor<2x4x?xf32>
  %f1 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x4x?xf32>) -> tensor<2x4x?xf32>
  %max = linalg.generic {indexing_maps = [#m3, #m4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x4x?x?xf32>) outs(%f1 : tensor<2x4x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<2x4x?xf32>
  %e2 = tensor.empty(%s, %s) : tensor<2x4x?x?xf32>
  %exp = linalg.generic {indexing_maps = [#m3, #m4, #m3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %max : tensor<2x4x?x?xf32>, tensor<2x4x?xf32>) outs(%e2 : tensor<2x4x?x?xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x4x?x?xf32>
  %e3 = tensor.empty(%s) : tensor<2x4x?x1xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<2x4x?x1xf32>) -> tensor<2x4x?x1xf32>
  %sum = linalg.generic {indexing_maps = [#m3, #m5], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%exp : tensor<2x4x?x?xf32>) outs(%f3 : tensor<2x4x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<2x4x?x1xf32>
  %e4 = tensor.empty(%s, %s) : tensor<2x4x?x?xf32>
  %y = linalg.generic {indexing_maps = [#m3, #m5, #m3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%exp, %sum : tensor<2x4x?x?xf32>, tensor<2x4x?x1xf32>) outs(%e4 : tensor<2x4x?x?xf32>) {
  ^bb0(%in: f32, %sm: f32, %out: f32):
    %q = arith.divf %in, %sm : f32
    linalg.yield %q : f32
  } -> tensor<2x4x?x?xf32>
  return %y : tensor<2x4x?x?xf32>
}

// -----

// A sum over a dynamic outer (reduced) dim is not tiled: left as it is.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse-dynamic.mlir:[[@LINE+7]]:8: remark: linalg.generic: left as loops: dynamic shapes other than outer parallel dims and the innermost dim [lowerline-tile-and-fuse]

// CHECK-LABEL: func.func @keeps_dynamic_outer_reduction(
// CHECK-NOT:     scf.for
// CHECK:         linalg.generic {{.+}} ins(%{{.+}} : tensor<?x48xf32>)
// CHECK-NOT:     vector_sizes
func.func @keeps_dynamic_outer_reduction(%x: tensor<?x48xf32>, %acc: tensor<48xf32>) -> tensor<48xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<?x48xf32>) outs(%acc : tensor<48xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<48xf32>
  return %r : tensor<48xf32>
}

// -----

// Dynamic rows of a static length (100): tiled as planned for a static row
// (two tiles of 50), no partial tile to split into register-wide steps.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse-dynamic.mlir:[[@LINE+9]]:8: remark: linalg.generic: g0: vector tile [1, 50], parallel tile [164, 0]

// CHECK-LABEL: func.func @keeps_static_row_whole(
// CHECK:         scf.forall
// CHECK:           scf.for {{.+}} to %c100 step %c50
// CHECK:             linalg.generic {{.+}} ins(%{{.+}} : tensor<1x50xf32>) {{.+}}vector_sizes = array<i64: 1, 50>
// CHECK-NOT:     vector_sizes = array<i64: 1, 16>
func.func @keeps_static_row_whole(%x: tensor<?x100xf32>, %s: index) -> tensor<?x100xf32> {
  %e = tensor.empty(%s) : tensor<?x100xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x100xf32>) outs(%e : tensor<?x100xf32>) {
  ^bb0(%in: f32, %out: f32):
    %ex = math.exp %in : f32
    linalg.yield %ex : f32
  } -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// The same rows, the argument's dim 0 declared to range over [1, 64]
// (lowerline.dynamic_ranges): at most 6400 elements, too few to be worth
// threads, so no forall over the rows (one tile of 164 rows would always
// hold them all anyway).
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse-dynamic.mlir:[[@LINE+11]]:8: remark: linalg.generic: g0: vector tile [1, 50] [lowerline-tile-and-fuse]

// CHECK-LABEL: func.func @rows_capped_by_range(
// CHECK-NOT:     scf.forall
// CHECK:         scf.for {{.+}} to %{{.+}} step %c1
// CHECK:           scf.for {{.+}} to %c100 step %c50
func.func @rows_capped_by_range(%x: tensor<?x100xf32>) -> tensor<?x100xf32>
    attributes {lowerline.dynamic_ranges = array<i64: 0, 0, 1, 64>} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x100xf32>
  %e = tensor.empty(%n) : tensor<?x100xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x100xf32>) outs(%e : tensor<?x100xf32>) {
  ^bb0(%in: f32, %out: f32):
    %ex = math.exp %in : f32
    linalg.yield %ex : f32
  } -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// A range whose maximum (4096 rows) is worth threads keeps the forall.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse-dynamic.mlir:[[@LINE+9]]:8: remark: linalg.generic: g0: vector tile [1, 50], parallel tile [164, 0]

// CHECK-LABEL: func.func @rows_within_large_range(
// CHECK:         scf.forall
func.func @rows_within_large_range(%x: tensor<?x100xf32>) -> tensor<?x100xf32>
    attributes {lowerline.dynamic_ranges = array<i64: 0, 0, 1, 4096>} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x100xf32>
  %e = tensor.empty(%n) : tensor<?x100xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x100xf32>) outs(%e : tensor<?x100xf32>) {
  ^bb0(%in: f32, %out: f32):
    %ex = math.exp %in : f32
    linalg.yield %ex : f32
  } -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// A dynamic N known to be 16 x %images (lowerline-winograd-conv's T over a
// dynamic batch, dim_divisor): planned for 16 columns, so the register
// tiles are 8x16 and divide N at every batch (the unknown N of @qk_dynamic_m_n
// is planned for 64: 8x32 tiles, a batch of one image one masked tile).
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse-dynamic.mlir:[[@LINE+12]]:8: remark: linalg.batch_matmul: g0: batch_matmul; fused fill; tiles: parallel 32x16, registers 8x16, masked, k loop of 1;

// CHECK-LABEL: func.func @columns_in_known_steps(
// CHECK:         scf.forall
// CHECK:               scf.for %{{.+}} = %{{.+}} to %c16{{(_[0-9]+)?}} step %c1
// CHECK:                 linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x8x1xf32>, tensor<1x1x16xf32>) outs(%{{.+}} : tensor<1x8x16xf32>)
func.func @columns_in_known_steps(%u: tensor<36x32x16xf32>, %v: tensor<36x16x?xf32>, %images: index) -> tensor<36x32x?xf32> {
  %z = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %t = arith.muli %images, %c16 : index
  %e = tensor.empty(%t) : tensor<36x32x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<36x32x?xf32>) -> tensor<36x32x?xf32>
  %r = linalg.batch_matmul ins(%u, %v : tensor<36x32x16xf32>, tensor<36x16x?xf32>) outs(%f : tensor<36x32x?xf32>) -> tensor<36x32x?xf32>
  return %r : tensor<36x32x?xf32>
}
