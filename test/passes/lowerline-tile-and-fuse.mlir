// The same input planned for two targets gives two tilings: Sapphire Rapids
// (AVX-512, 32 vector registers) takes 8x32 register tiles, Haswell (AVX2,
// 16 registers) 6x16. The plan (explain: remarks) goes to stderr, checked
// separately.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t.spr | FileCheck %s --check-prefixes=CHECK,SPR
// RUN: FileCheck %s --input-file=%t.spr --check-prefixes=EXPLAIN,EXPLAIN-SPR
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=haswell explain})" \
// RUN:   --split-input-file 2>%t.hsw | FileCheck %s --check-prefixes=CHECK,HSW
// RUN: FileCheck %s --input-file=%t.hsw --check-prefixes=EXPLAIN,EXPLAIN-HSW

// matmul + fill + bias + relu: one fusion group. A parallel scf.forall over
// (mc, nc) tiles; inside it an (mr, nr) loop nest over register tiles holding
// the fill, the k loop (step 1) of the matmul and the epilogue, which reads
// the accumulators before they are stored.
// EXPLAIN-SPR:      remark: builtin.module: target sapphirerapids (sapphirerapids, 512-bit vectors, L1 48 KiB, L2 2048 KiB, 2 cores) [lowerline-tile-and-fuse]
// EXPLAIN-HSW:      remark: builtin.module: target haswell (haswell, 256-bit vectors, L1 32 KiB, L2 256 KiB, 4 cores) [lowerline-tile-and-fuse]
// EXPLAIN-SPR-NEXT: lowerline-tile-and-fuse.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: linalg.matmul: g0: matmul; fused fill, linalg.generic, linalg.generic; tiles: parallel 48x128, registers 8x32, k loop of 1; 3.15 MFLOP, 0.20 MB moved [lowerline-tile-and-fuse]
// EXPLAIN-HSW-NEXT: lowerline-tile-and-fuse.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: linalg.matmul: g0: matmul; fused fill, linalg.generic, linalg.generic; tiles: parallel 48x64, registers 6x16, k loop of 1; 3.15 MFLOP, 0.20 MB moved [lowerline-tile-and-fuse]
// EXPLAIN-NOT:        not fused
// EXPLAIN-NOT:        left as loops

// CHECK-LABEL: func.func @matmul_bias_relu(
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<48x256xf32>
// SPR:           %[[NEST:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs(%{{.+}} = %[[E]]) -> (tensor<48x256xf32>)
// HSW:           %[[NEST:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (1, 4) shared_outs(%{{.+}} = %[[E]]) -> (tensor<48x256xf32>)
// SPR-DAG:         %[[MR:[a-z0-9_]+]] = arith.constant 8 : index
// SPR-DAG:         %[[NR:[a-z0-9_]+]] = arith.constant 32 : index
// HSW-DAG:         %[[MR:[a-z0-9_]+]] = arith.constant 6 : index
// HSW-DAG:         %[[NR:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK:           scf.for %[[I:[a-z0-9_]+]] = %{{.+}} to %{{.+}} step %[[MR]] iter_args(
// CHECK:             scf.for %[[J:[a-z0-9_]+]] = %{{.+}} to %{{.+}} step %[[NR]] iter_args(%[[T:[a-z0-9_]+]] =
// SPR:                 %[[F:.+]] = linalg.fill {lowerline.vector_sizes = array<i64: 8, 32>} ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x32xf32>)
// HSW:                 %[[F:.+]] = linalg.fill {lowerline.vector_sizes = array<i64: 6, 16>} ins(%{{.+}} : f32) outs(%{{.+}} : tensor<6x16xf32>)
// CHECK:               %[[ONE:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK:               %[[ACC:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[ONE]] iter_args(%{{.+}} = %[[F]])
// SPR:                   linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 1>} ins(%{{.+}}, %{{.+}} : tensor<8x1xf32>, tensor<1x32xf32>) outs(%{{.+}} : tensor<8x32xf32>)
// HSW:                   linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 6, 16, 1>} ins(%{{.+}}, %{{.+}} : tensor<6x1xf32>, tensor<1x16xf32>) outs(%{{.+}} : tensor<6x16xf32>)
// CHECK:                 scf.yield
// SPR:                 %[[BIASED:.+]] = linalg.generic {{.+}} ins(%[[ACC]], %{{.+}} : tensor<8x32xf32>, tensor<32xf32>) {{.+}} attrs = {lowerline.vector_sizes = array<i64: 8, 32>}
// HSW:                 %[[BIASED:.+]] = linalg.generic {{.+}} ins(%[[ACC]], %{{.+}} : tensor<6x16xf32>, tensor<16xf32>) {{.+}} attrs = {lowerline.vector_sizes = array<i64: 6, 16>}
// CHECK:                 arith.addf
// SPR:                 %[[RELU:.+]] = linalg.generic {{.+}} ins(%[[BIASED]] : tensor<8x32xf32>) {{.+}} attrs = {lowerline.vector_sizes = array<i64: 8, 32>}
// HSW:                 %[[RELU:.+]] = linalg.generic {{.+}} ins(%[[BIASED]] : tensor<6x16xf32>) {{.+}} attrs = {lowerline.vector_sizes = array<i64: 6, 16>}
// CHECK:                 arith.maximumf
// CHECK:               tensor.insert_slice %[[RELU]] into %[[T]][%[[I]], %[[J]]]
// CHECK:           scf.forall.in_parallel
// CHECK-NEXT:        tensor.parallel_insert_slice
// CHECK:         return %[[NEST]] : tensor<48x256xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @matmul_bias_relu(%a: tensor<48x128xf32>, %b: tensor<128x256xf32>, %bias: tensor<256xf32>) -> tensor<48x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<48x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<48x256xf32>) -> tensor<48x256xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<48x128xf32>, tensor<128x256xf32>) outs(%f : tensor<48x256xf32>) -> tensor<48x256xf32>
  %biased = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<48x256xf32>, tensor<256xf32>) outs(%e : tensor<48x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<48x256xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%biased : tensor<48x256xf32>) outs(%e : tensor<48x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<48x256xf32>
  return %relu : tensor<48x256xf32>
}

// -----

// A consumer that reads the matmul result transposed is refused (it would
// recompute): the matmul nest holds only the fill, and the consumer is tiled
// on its own, to vector rows, reading the stored result.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: linalg.matmul: g0: matmul; fused fill; tiles: parallel
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+21]]:8: remark: linalg.generic: not fused into g0: it reads the result through (d0, d1) -> (d1, d0): it would recompute [lowerline-tile-and-fuse]
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+20]]:8: remark: linalg.generic: g1: vector tile [1, 32] [lowerline-tile-and-fuse]

// CHECK-LABEL: func.func @refuses_transposed_consumer(
// CHECK:         %[[NEST:.+]] = scf.forall
// CHECK-NOT:       linalg.generic
// CHECK:           linalg.matmul {lowerline.contract
// CHECK-NOT:       linalg.generic
// CHECK:           scf.forall.in_parallel
// CHECK:         %[[R:.+]] = scf.for
// CHECK:           scf.for
// CHECK:             %[[S:.+]] = tensor.extract_slice %[[NEST]][%{{.+}}, %{{.+}}] [32, 1] [1, 1] : tensor<32x32xf32> to tensor<32x1xf32>
// CHECK:             linalg.generic {{.+}} ins(%[[S]] : tensor<32x1xf32>) outs(%{{.+}} : tensor<1x32xf32>) attrs = {lowerline.vector_sizes = array<i64: 1, 32>}
// CHECK:         return %[[R]] : tensor<32x32xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func @refuses_transposed_consumer(%a: tensor<32x64xf32>, %b: tensor<64x32xf32>) -> tensor<32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x32xf32>) -> tensor<32x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x32xf32>) outs(%f : tensor<32x32xf32>) -> tensor<32x32xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<32x32xf32>
  return %t : tensor<32x32xf32>
}

// -----

// A matmul result with two users must be stored anyway: its consumers are
// refused and tiled on their own.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+17]]:9: remark: linalg.matmul: g0: matmul; fused fill; tiles: parallel
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+16]]:9: remark: linalg.matmul: no consumer fused into g0: the result has 2 users and must be stored anyway [lowerline-tile-and-fuse]
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: linalg.generic: g1: vector tile [1, 32] [lowerline-tile-and-fuse]

// CHECK-LABEL: func.func @refuses_result_with_two_users(
// CHECK:         %[[NEST:.+]] = scf.forall
// CHECK-NOT:       linalg.generic
// CHECK:           scf.forall.in_parallel
// CHECK:         %[[R:.+]] = scf.for
// CHECK:             tensor.extract_slice %[[NEST]]
// CHECK:             linalg.generic {{.+}} attrs = {lowerline.vector_sizes = array<i64: 1, 32>}
// CHECK:         return %[[NEST]], %[[R]] : tensor<32x32xf32>, tensor<32x32xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @refuses_result_with_two_users(%a: tensor<32x64xf32>, %b: tensor<64x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x32xf32>) -> tensor<32x32xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x32xf32>) outs(%f : tensor<32x32xf32>) -> tensor<32x32xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<32x32xf32>
  return %mm, %t : tensor<32x32xf32>, tensor<32x32xf32>
}

// -----

// A dynamic K: planned as 64; the k loop of step 1 runs to K, the register
// tiles stay static (16 rows, 32 columns: they divide).
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+10]]:9: remark: linalg.matmul: g0: matmul; fused nothing; tiles: parallel {{[0-9]+x[0-9]+}}, registers {{[0-9]+x[0-9]+}}, k loop of 1;
// EXPLAIN-NOT:      left as loops

// CHECK-LABEL: func.func @tiles_dynamic_k(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<16x?xf32>
// CHECK:         %[[K:.+]] = tensor.dim %[[A]], %{{.+}} : tensor<16x?xf32>
// CHECK:         scf.forall
// CHECK:               scf.for %{{.+}} = %{{.+}} to %[[K]] step %{{.+}}
// CHECK:                 linalg.matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<{{[0-9]+}}x1xf32>, tensor<1x{{[0-9]+}}xf32>) outs(%{{.+}} : tensor<{{[0-9]+x[0-9]+}}xf32>)
func.func @tiles_dynamic_k(%a: tensor<16x?xf32>, %b: tensor<?x32xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %mm = linalg.matmul ins(%a, %b : tensor<16x?xf32>, tensor<?x32xf32>) outs(%c : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %mm : tensor<16x32xf32>
}

// -----

// A dynamic M (lowerline.compile(..., dynamic=...)): planned as 64 rows,
// the fill and the bias + ReLU epilogue fused as for a static M. In the
// forall's row tiles: full register tiles, then the remaining rows in one
// piece of their count (7, 6, ..., 1 on Sapphire Rapids, 3, 2, 1 on
// Haswell), every register tile static (no masks), the epilogue on each.
// Pieces whose row count is not a power of two are marked
// lowerline.exact_rows (vectorized at that count); the full tiles and the
// power-of-two pieces are not.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+43]]:9: remark: linalg.matmul: g0: matmul; fused fill, linalg.generic; tiles: parallel 64x{{[0-9]+}}, registers {{[0-9]+x[0-9]+}}, k loop of 1;

// CHECK-LABEL: func.func @tiles_dynamic_rows(
// CHECK-NOT:     tensor<?x1xf32>
// CHECK:         scf.forall
// SPR:             linalg.fill {{.+}} -> tensor<8x32xf32>
// SPR-NOT:           exact_rows
// SPR:               linalg.matmul {{.+}} : tensor<8x1xf32>, tensor<1x32xf32>) outs(%{{.+}} : tensor<8x32xf32>)
// SPR:             linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<8x32xf32>, tensor<32xf32>)
// SPR:             linalg.fill {{.+}}lowerline.exact_rows{{.+}} -> tensor<7x32xf32>
// SPR:               linalg.matmul {{.+}}lowerline.exact_rows{{.+}} : tensor<7x1xf32>, tensor<1x32xf32>) outs(%{{.+}} : tensor<7x32xf32>)
// SPR:             linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<7x32xf32>, tensor<32xf32>) {{.+}}lowerline.exact_rows
// SPR:             linalg.fill {{.+}} -> tensor<6x32xf32>
// SPR:             linalg.fill {{.+}} -> tensor<5x32xf32>
// SPR:             linalg.fill {{.+}} -> tensor<4x32xf32>
// SPR-NOT:           exact_rows
// SPR:               linalg.matmul {{.+}} : tensor<4x1xf32>, tensor<1x32xf32>) outs(%{{.+}} : tensor<4x32xf32>)
// SPR:             linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<4x32xf32>, tensor<32xf32>)
// SPR:             linalg.fill {{.+}}lowerline.exact_rows{{.+}} -> tensor<3x32xf32>
// SPR:             linalg.fill {{.+}} -> tensor<2x32xf32>
// SPR:               linalg.matmul {{.+}} : tensor<2x1xf32>, tensor<1x32xf32>) outs(%{{.+}} : tensor<2x32xf32>)
// SPR:             linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<2x32xf32>, tensor<32xf32>)
// HSW:             linalg.fill {{.+}} -> tensor<4x16xf32>
// HSW:               linalg.matmul {{.+}} : tensor<4x1xf32>, tensor<1x16xf32>) outs(%{{.+}} : tensor<4x16xf32>)
// HSW:             linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<16xf32>)
// HSW:             linalg.fill {{.+}}lowerline.exact_rows{{.+}} -> tensor<3x16xf32>
// HSW:               linalg.matmul {{.+}}lowerline.exact_rows{{.+}} : tensor<3x1xf32>, tensor<1x16xf32>) outs(%{{.+}} : tensor<3x16xf32>)
// HSW:             linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<3x16xf32>, tensor<16xf32>) {{.+}}lowerline.exact_rows
// HSW:             linalg.fill {{.+}} -> tensor<2x16xf32>
// HSW:               linalg.matmul {{.+}} : tensor<2x1xf32>, tensor<1x16xf32>) outs(%{{.+}} : tensor<2x16xf32>)
// HSW:             linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<2x16xf32>, tensor<16xf32>)
// CHECK-NOT:         exact_rows
// CHECK:           linalg.fill {{.+}} -> tensor<1x[[W:[0-9]+]]xf32>
// CHECK:             linalg.matmul {{.+}} : tensor<1x1xf32>, tensor<1x[[W]]xf32>) outs(%{{.+}} : tensor<1x[[W]]xf32>)
// CHECK:           linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x[[W]]xf32>, tensor<[[W]]xf32>)
// CHECK-NOT:     tensor<?x1xf32>
// CHECK:         return
func.func @tiles_dynamic_rows(%a: tensor<?x64xf32>, %b: tensor<64x64xf32>, %bias: tensor<64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x64xf32>
  %empty = tensor.empty(%m) : tensor<?x64xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x64xf32>) -> tensor<?x64xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fill : tensor<?x64xf32>) -> tensor<?x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<?x64xf32>, tensor<64xf32>) outs(%empty : tensor<?x64xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %s = arith.addf %in, %bi : f32
    %relu = arith.maximumf %s, %zero : f32
    linalg.yield %relu : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// The remainder pieces of a wide dynamic-M matmul below half the register
// tile's rows are widened along N, up to the full tile's accumulator count
// (a 1-row piece of 2 vectors would wait on each FMA's latency); from half
// up they keep its width (and its packed B): on Sapphire Rapids 8x32, then
// 7x32 ... 4x32, 3x64, 2x128, 1x256.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+10]]:9: remark: linalg.matmul: g0: matmul; fused nothing; tiles: parallel 64x{{[0-9]+}},

// CHECK-LABEL: func.func @widens_dynamic_row_pieces(
// SPR:               linalg.matmul {{.+}} : tensor<8x1xf32>, tensor<1x32xf32>)
// SPR:               linalg.matmul {{.+}} : tensor<7x1xf32>, tensor<1x32xf32>)
// SPR:               linalg.matmul {{.+}} : tensor<4x1xf32>, tensor<1x32xf32>)
// SPR:               linalg.matmul {{.+}} : tensor<3x1xf32>, tensor<1x64xf32>)
// SPR:               linalg.matmul {{.+}} : tensor<2x1xf32>, tensor<1x128xf32>)
// SPR:               linalg.matmul {{.+}} : tensor<1x1xf32>, tensor<1x256xf32>)
func.func @widens_dynamic_row_pieces(%a: tensor<?x64xf32>, %b: tensor<64x512xf32>, %c: tensor<?x512xf32>) -> tensor<?x512xf32> {
  %mm = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x512xf32>) outs(%c : tensor<?x512xf32>) -> tensor<?x512xf32>
  return %mm : tensor<?x512xf32>
}

// -----

// A dynamic batch (attention's batch x heads) is tiled by 1 like a static
// one: every tile is static.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+12]]:8: remark: linalg.batch_matmul: g0: batch_matmul; fused fill; tiles: parallel 16x{{[0-9]+}}, registers {{[0-9]+x[0-9]+}}, k loop of 1;

// CHECK-LABEL: func.func @tiles_dynamic_batch(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 2, {{[0-9]+}})
// SPR:               linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x8x1xf32>, tensor<1x1x32xf32>) outs(%{{.+}} : tensor<1x8x32xf32>)
// HSW:               linalg.batch_matmul {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x4x1xf32>, tensor<1x1x16xf32>) outs(%{{.+}} : tensor<1x4x16xf32>)
func.func @tiles_dynamic_batch(%q: tensor<?x32x16xf32>, %k: tensor<?x16x32xf32>) -> tensor<?x32x32xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %q, %c0 : tensor<?x32x16xf32>
  %empty = tensor.empty(%n) : tensor<?x32x32xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x32x32xf32>) -> tensor<?x32x32xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<?x32x16xf32>, tensor<?x16x32xf32>) outs(%fill : tensor<?x32x32xf32>) -> tensor<?x32x32xf32>
  return %s : tensor<?x32x32xf32>
}

// -----

// Elementwise ops over dynamic rows are tiled by rows of 1: every tile is a
// static vector. A forall over ceildiv(rows, tile) spreads them over the
// cores, a tile holding a core's share of the work a static op is split
// at (2^15 elements: 342 rows of 48 on 2 cores, 171 on 4). A dynamic
// innermost dim is tiled in whole vectors, the partial last tile peeled and
// run in masked steps of one register (a row of 17 does not run as one
// masked tile of 64), on one thread.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-SPR-NEXT: lowerline-tile-and-fuse.mlir:[[@LINE+18]]:8: remark: linalg.generic: g0: vector tile [1, 48], parallel tile [342, 0] [lowerline-tile-and-fuse]
// EXPLAIN-HSW-NEXT: lowerline-tile-and-fuse.mlir:[[@LINE+17]]:8: remark: linalg.generic: g0: vector tile [1, 24], parallel tile [171, 0] [lowerline-tile-and-fuse]
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+21]]:8: remark: linalg.generic: g1: vector tile [1, {{[0-9]+}}] [lowerline-tile-and-fuse]

// CHECK-LABEL: func.func @tiles_dynamic_rows_by_one(
// CHECK:         scf.forall (%{{.+}}) in (%{{.+}})
// CHECK:           scf.for
// SPR:               linalg.generic {{.+}} ins(%{{.+}} : tensor<1x48xf32>) {{.+}}lowerline.vector_sizes = array<i64: 1, 48>
// HSW:               linalg.generic {{.+}} ins(%{{.+}} : tensor<1x24xf32>) {{.+}}lowerline.vector_sizes = array<i64: 1, 24>
// CHECK:         scf.for
// CHECK:           %[[FULL:.+]] = affine.apply
// CHECK:           scf.for %{{.+}} = %{{.+}} to %[[FULL]] step
// CHECK:             linalg.generic {{.+}} ins(%{{.+}} : tensor<1x[[VL:[0-9]+]]xf32>) {{.+}}lowerline.vector_sizes = array<i64: 1, [[VL]]>
// CHECK:           scf.for %{{.+}} = %[[FULL]] to
// CHECK:             scf.for
// SPR:                 linalg.generic {{.+}} ins(%{{.+}} : tensor<1x?xf32>) {{.+}}lowerline.vector_sizes = array<i64: 1, 16>
// HSW:                 linalg.generic {{.+}} ins(%{{.+}} : tensor<1x?xf32>) {{.+}}lowerline.vector_sizes = array<i64: 1, 8>
func.func @tiles_dynamic_rows_by_one(%x: tensor<?x48xf32>, %y: tensor<48x?xf32>) -> (tensor<?x48xf32>, tensor<48x?xf32>) {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x48xf32>) outs(%x : tensor<?x48xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<?x48xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<48x?xf32>) outs(%y : tensor<48x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<48x?xf32>
  return %r, %c : tensor<?x48xf32>, tensor<48x?xf32>
}

// -----

// An i32 matmul (unsupported element type) is skipped and left as it is.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-NEXT:     lowerline-tile-and-fuse.mlir:[[@LINE+7]]:9: remark: linalg.matmul: left as loops: mixed or unsupported element types [lowerline-tile-and-fuse]

// CHECK-LABEL: func.func @skips_i32_matmul(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<32x64xi32>, %[[B:[a-z0-9]+]]: tensor<64x32xi32>, %[[C:[a-z0-9]+]]: tensor<32x32xi32>)
// CHECK-NEXT:    %[[R:.+]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<32x64xi32>, tensor<64x32xi32>) outs(%[[C]] : tensor<32x32xi32>)
// CHECK-NEXT:    return %[[R]]
func.func @skips_i32_matmul(%a: tensor<32x64xi32>, %b: tensor<64x32xi32>, %c: tensor<32x32xi32>) -> tensor<32x32xi32> {
  %mm = linalg.matmul ins(%a, %b : tensor<32x64xi32>, tensor<64x32xi32>) outs(%c : tensor<32x32xi32>) -> tensor<32x32xi32>
  return %mm : tensor<32x32xi32>
}

// -----

// A row of 56 columns is not a multiple of the register tile: the partial
// column tile is peeled, and split into power-of-two pieces (sapphirerapids:
// 32 + 16 + 8; haswell's 16-wide tiles leave 8, a power of two already).
// Every piece keeps a static shape through its (c, kh, kw) loops: a dynamic
// tile's accumulators are not hoisted out of them (a load and a store per
// FMA), a masked one costs a select per FMA.
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-SPR-NEXT: lowerline-tile-and-fuse.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill, linalg.generic; tiles: parallel 8 channels x 8 rows, registers 8 channels x 32 columns, partial tile as 16 + 8 columns
// EXPLAIN-HSW-NEXT: lowerline-tile-and-fuse.mlir:{{[0-9]+}}:{{[0-9]+}}: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill, linalg.generic; tiles: parallel 4 channels x 8 rows, registers 4 channels x 16 columns, masked

// CHECK-LABEL: func.func @peels_partial_conv_columns(
// CHECK-NOT:     {{x\?x}}
// SPR:           scf.for {{.+}} -> (tensor<1x8x1x32xf32>)
// HSW:           scf.for {{.+}} -> (tensor<1x4x1x16xf32>)
// CHECK-NOT:     {{x\?x}}
// SPR:           scf.for {{.+}} -> (tensor<1x8x1x16xf32>)
// CHECK-NOT:     {{x\?x}}
// SPR:           scf.for {{.+}} -> (tensor<1x8x1x8xf32>)
// HSW:           scf.for {{.+}} -> (tensor<1x4x1x8xf32>)
// CHECK-NOT:     {{x\?x}}
// CHECK:         return
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @peels_partial_conv_columns(%x: tensor<1x4x58x58xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x56x56xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x56x56xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x56x56xf32>) -> tensor<1x8x56x56xf32>
  %c = linalg.conv_2d_nchw_fchw ins(%x, %w : tensor<1x4x58x58xf32>, tensor<8x4x3x3xf32>) outs(%f : tensor<1x8x56x56xf32>) -> tensor<1x8x56x56xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x8x56x56xf32>) outs(%e : tensor<1x8x56x56xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x56x56xf32>
  return %r : tensor<1x8x56x56xf32>
}

// -----

// A plane narrower than a register tile (a late CNN stage's 10 x 10): the
// whole row is the partial tile, split into 8 + 2 columns on both targets,
// never one masked 10-column tile (its accumulators would be loaded and
// stored at every step of the (c, kh, kw) loops).
// EXPLAIN:          remark: builtin.module: target
// EXPLAIN-SPR-NEXT: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill; tiles: parallel 8 channels x 5 rows, registers 8 channels x 16 columns, partial tile as 8 + 2 columns
// EXPLAIN-HSW-NEXT: remark: linalg.conv_2d_nchw_fchw: g0: conv; fused fill; tiles: parallel 4 channels x 5 rows, registers 4 channels x 16 columns, partial tile as 8 + 2 columns
// CHECK-LABEL: func.func @splits_small_planes(
// CHECK-NOT:     {{x\?x}}
// SPR:           scf.for {{.+}} -> (tensor<1x8x1x8xf32>)
// SPR:           scf.for {{.+}} -> (tensor<1x8x1x2xf32>)
// HSW:           scf.for {{.+}} -> (tensor<1x4x1x8xf32>)
// HSW:           scf.for {{.+}} -> (tensor<1x4x1x2xf32>)
// CHECK-NOT:     {{x\?x}}
// CHECK:         return
func.func @splits_small_planes(%x: tensor<1x64x12x12xf32>, %w: tensor<8x64x3x3xf32>) -> tensor<1x8x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x10x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x10x10xf32>) -> tensor<1x8x10x10xf32>
  %c = linalg.conv_2d_nchw_fchw ins(%x, %w : tensor<1x64x12x12xf32>, tensor<8x64x3x3xf32>) outs(%f : tensor<1x8x10x10xf32>) -> tensor<1x8x10x10xf32>
  return %c : tensor<1x8x10x10xf32>
}

// -----

// A matmul of arguments with no epilogue: its fill is fused into the register
// tile (structured.fuse), so each tile's accumulators start from zeros
// instead of a zero-filled C read back.
// CHECK-LABEL: func.func @fuses_fill_into_register_tiles(
// CHECK:         scf.forall
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               %[[Z:.+]] = linalg.fill {{.+}} -> tensor<{{[0-9]+}}x{{[0-9]+}}xf32>
// CHECK:               scf.for {{.+}} iter_args(%{{.+}} = %[[Z]])
// CHECK:                 linalg.matmul
func.func @fuses_fill_into_register_tiles(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// B computed by an scf.forall (already tiled code, such as the Winograd input
// transform): nothing structured.fuse could pull in, so the fill is fused
// into the register tiles as for arguments.
// CHECK-LABEL: func.func @fuses_fill_when_b_comes_from_a_loop(
// CHECK:         %[[B:.+]] = scf.forall
// CHECK:         scf.forall
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               %[[Z:.+]] = linalg.fill {{.+}} -> tensor<{{[0-9]+}}x{{[0-9]+}}xf32>
// CHECK:               scf.for {{.+}} iter_args(%{{.+}} = %[[Z]])
// CHECK:                 linalg.matmul
func.func @fuses_fill_when_b_comes_from_a_loop(%a: tensor<64x128xf32>, %x: tensor<128x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<128x64xf32>
  %b = scf.forall (%i) in (2) shared_outs(%o = %eb) -> (tensor<128x64xf32>) {
    %off = affine.apply affine_map<(d0) -> (d0 * 64)>(%i)
    %s = tensor.extract_slice %x[%off, 0] [64, 64] [1, 1] : tensor<128x64xf32> to tensor<64x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%off, 0] [64, 64] [1, 1] : tensor<64x64xf32> into tensor<128x64xf32>
    }
  }
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// When A is computed by another op, fusing the fill that way would also pull
// that op into every register tile: the fill gets register loops of its own,
// before the matmul's.
// CHECK-LABEL: func.func @keeps_fill_apart_when_a_is_computed(
// CHECK:         scf.forall
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               linalg.fill {{.+}} -> tensor<{{[0-9]+}}x{{[0-9]+}}xf32>
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK-NOT:           linalg.fill
// CHECK:               scf.for
// CHECK:                 linalg.matmul
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @keeps_fill_apart_when_a_is_computed(%x: tensor<64x128xf32>, %b: tensor<128x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<64x128xf32>
  %a = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x128xf32>) outs(%ea : tensor<64x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = math.tanh %in : f32
    linalg.yield %t : f32
  } -> tensor<64x128xf32>
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// One fill shared by two matmuls (CSE merges equal fills): each root gets a
// fill of its own, with an empty tensor of its own, and fuses it (the
// refusal "the fill has other users" is gone).
// EXPLAIN:            lowerline-tile-and-fuse.mlir:[[@LINE+13]]:{{[0-9]+}}: remark: linalg.matmul: g0: matmul; fused fill;
// EXPLAIN-NOT:        not fused
// EXPLAIN:            lowerline-tile-and-fuse.mlir:[[@LINE+12]]:{{[0-9]+}}: remark: linalg.matmul: g1: matmul; fused fill;
// EXPLAIN-NOT:        not fused
// CHECK-LABEL: func.func @unshares_a_fill_of_two_roots(
// CHECK:         scf.forall
// CHECK:           linalg.fill
// CHECK:         scf.forall
// CHECK:           linalg.fill
func.func @unshares_a_fill_of_two_roots(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>, %c: tensor<128x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = linalg.matmul ins(%a, %c : tensor<64x128xf32>, tensor<128x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r, %s : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// A fill that is also returned keeps that use: the matmul fuses a clone, the
// original stays and is tiled on its own.
// EXPLAIN:            lowerline-tile-and-fuse.mlir:[[@LINE+11]]:{{[0-9]+}}: remark: linalg.matmul: g0: matmul; fused fill; tiles:
// EXPLAIN-NEXT:       lowerline-tile-and-fuse.mlir:[[@LINE+9]]:{{[0-9]+}}: remark: linalg.fill: g1: vector tile
// CHECK-LABEL: func.func @keeps_a_fill_with_other_users(
// CHECK:         %[[F:.+]] = scf.for
// CHECK:         %[[MM:.+]] = scf.forall
// CHECK:           linalg.fill
// CHECK:         return %[[MM]], %[[F]]
func.func @keeps_a_fill_with_other_users(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r, %f : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// A reduction along a long innermost axis is split into chunks of the
// target's lanes times 4 (64 on Sapphire Rapids, 32 on Haswell) accumulated in partial
// results, then merged once per row: no vector as long as the row. 1000 is
// not a multiple of the chunk: the chunk loop is peeled, the full chunks
// (static slices: their partial results stay in registers) then the partial
// last chunk (masked later).
// EXPLAIN-SPR:        remark: linalg.generic: g1: vector tile [1, 0], reduced in chunks [0, 64] [lowerline-tile-and-fuse]
// EXPLAIN-HSW:        remark: linalg.generic: g1: vector tile [1, 0], reduced in chunks [0, 32] [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @splits_long_row_reduction(
// CHECK:         scf.for
// SPR:             %[[ACC:.+]] = linalg.fill {lowerline.vector_sizes = array<i64: 1, 64>} {{.+}} -> tensor<1x64xf32>
// HSW:             %[[ACC:.+]] = linalg.fill {lowerline.vector_sizes = array<i64: 1, 32>} {{.+}} -> tensor<1x32xf32>
// SPR:             %[[FULL:.+]] = scf.for %{{.+}} = %{{.+}} to %c960 step %c64 iter_args(%{{.+}} = %[[ACC]])
// HSW:             %[[FULL:.+]] = scf.for %{{.+}} = %{{.+}} to %c992 step %c32 iter_args(%{{.+}} = %[[ACC]])
// CHECK:             linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]
// SPR-SAME:            lowerline.vector_sizes = array<i64: 1, 64>
// HSW-SAME:            lowerline.vector_sizes = array<i64: 1, 32>
// CHECK:           %[[PART:.+]] = scf.for {{.+}} to %c1000 {{.+}} iter_args(%{{.+}} = %[[FULL]])
// CHECK:           linalg.reduce ins(%[[PART]] : {{.+}}) {{.+}} dimensions = [1]
// CHECK-NOT:     array<i64: 1, 1000>
func.func @splits_long_row_reduction(%a: tensor<4x1000xf32>) -> tensor<4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x1000xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %o : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Rows no longer than a chunk (16), and reductions over an outer axis (the
// innermost is parallel, already vector-sized): not split; the column
// reduction is tiled columns outside rows (loop order [1, 0]).
// EXPLAIN-NOT:        reduced in chunks
// EXPLAIN:            remark: linalg.generic: g3: vector tile [1, 16], loop order [1, 0] [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @keeps_short_rows_and_column_reductions_whole(
// CHECK-NOT:     linalg.reduce
// CHECK:         linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      lowerline.vector_sizes = array<i64: 1, 16>
// CHECK:         linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]
// CHECK-SAME:      lowerline.vector_sizes = array<i64: 1, 16>
// CHECK-NOT:     linalg.reduce
func.func @keeps_short_rows_and_column_reductions_whole(%a: tensor<4x16xf32>) -> (tensor<4xf32>, tensor<16xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x16xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<16xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<16xf32>) -> tensor<16xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]}
      ins(%a : tensor<4x16xf32>) outs(%f2 : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %0, %1 : tensor<4xf32>, tensor<16xf32>
}

// -----

// A row reduction kept as a unit dim (softmax's row maximum: the output map
// (d0, d1) -> (d0, 0)), which upstream's reduction tiling cannot take: its
// output is collapsed to tensor<4xf32> first and expanded back after it.
// EXPLAIN-SPR:        remark: linalg.generic: g1: vector tile [1, 0], reduced in chunks [0, 64] [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @splits_row_reduction_with_unit_output_dim(
// CHECK:         %[[INIT:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<4x1xf32> into tensor<4xf32>
// CHECK:         %[[R:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[INIT]]) -> (tensor<4xf32>)
// CHECK:           linalg.reduce
// CHECK:         %[[E:.+]] = tensor.expand_shape %[[R]] {{\[\[}}0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
// CHECK:         return %[[E]]
func.func @splits_row_reduction_with_unit_output_dim(%a: tensor<4x1000xf32>) -> tensor<4x1xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x1000xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %o : f32
    linalg.yield %m : f32
  } -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Zero-size dimensions are not planned (tile sizes would divide by them, and
// tiling an empty dimension aborted LLVM in computeAllSliceParameters): the
// ops stay as they are, their loops run zero times, and explain says why.
// CHECK-LABEL: func.func @empty_dimensions_are_not_tiled(
// CHECK-NOT:     scf.forall
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     scf.forall
// CHECK:         linalg.matmul
// CHECK:         linalg.transpose
// CHECK:         return
// EXPLAIN-DAG: remark: linalg.conv_2d_nchw_fchw: left as loops: an empty tensor: nothing to compute
// EXPLAIN-DAG: remark: linalg.matmul: left as loops: an empty tensor: nothing to compute
// EXPLAIN-DAG: remark: linalg.transpose: left as loops: an empty tensor: nothing to compute
func.func @empty_dimensions_are_not_tiled(%x: tensor<1x0x5x5xf32>, %w: tensor<4x0x3x3xf32>,
    %a: tensor<2x0xf32>, %b: tensor<0x3xf32>, %t: tensor<0x4xf32>)
    -> (tensor<1x4x3x3xf32>, tensor<2x3xf32>, tensor<4x0xf32>) {
  %z = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x4x3x3xf32>
  %f0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %c = linalg.conv_2d_nchw_fchw ins(%x, %w : tensor<1x0x5x5xf32>, tensor<4x0x3x3xf32>)
    outs(%f0 : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %e1 = tensor.empty() : tensor<2x3xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = linalg.matmul ins(%a, %b : tensor<2x0xf32>, tensor<0x3xf32>) outs(%f1 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %e2 = tensor.empty() : tensor<4x0xf32>
  %tr = linalg.transpose ins(%t : tensor<0x4xf32>) outs(%e2 : tensor<4x0xf32>) permutation = [1, 0]
  return %c, %m, %tr : tensor<1x4x3x3xf32>, tensor<2x3xf32>, tensor<4x0xf32>
}
