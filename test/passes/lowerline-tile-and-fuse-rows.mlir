// Row kernels of lowerline-tile-and-fuse (passes/tiling/row_kernels.py):
// row reductions and the elementwise op that reads their statistics become
// one loop over rows.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t | FileCheck %s
// RUN: FileCheck %s --input-file=%t --check-prefix=EXPLAIN

// Layer norm without its affine part, as the graph stage leaves it: mean,
// variance, normalization. The mean is written through (d0, 0) (keepdim):
// the reductions are given a unit loop for it and fused by rows. 64 rows
// of 1000: a forall over the rows (two cores), each row reduced in chunks of
// 64 (peeled: 1000 = 15 x 64 + 40) and normalized in vectors. A row of
// 1000 stays in L2 between two sweeps: its moments stay two sweeps of
// chunks (the remark says nothing of Chan's formula).
// EXPLAIN: remark: linalg.generic: g0: row kernel of 6 ops over [64] rows of [1000] (rows split across threads) [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @layer_norm_rows(
// CHECK:         scf.forall (%[[ROW:.+]]) in (64)
// CHECK:           tensor.extract_slice %{{.+}}[%[[ROW]], 0] [1, 1000]
// CHECK:           scf.for {{.+}} to %c960 step %c64
// CHECK:             linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME:          lowerline.vector_sizes = array<i64: 1, 1, 64>
// CHECK:           linalg.reduce
// CHECK:           math.rsqrt
// CHECK:           scf.for
// CHECK:             linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME:          lowerline.vector_sizes = array<i64: 1, 50>
// CHECK:           scf.forall.in_parallel
// CHECK-NOT:     linalg.generic
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @layer_norm_rows(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 1000.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e1 = tensor.empty() : tensor<64x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<64x1xf32>) -> tensor<64x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x1000xf32>) outs(%f : tensor<64x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<64x1xf32>
  %mean = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<64x1xf32>) outs(%e1 : tensor<64x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.divf %a, %n : f32
    linalg.yield %m : f32
  } -> tensor<64x1xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : tensor<64x1000xf32>, tensor<64x1xf32>) outs(%f : tensor<64x1xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %d2, %acc : f32
    linalg.yield %s : f32
  } -> tensor<64x1xf32>
  %rstd = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sq : tensor<64x1xf32>) outs(%e1 : tensor<64x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<64x1xf32>
  %e2 = tensor.empty() : tensor<64x1000xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean, %rstd : tensor<64x1000xf32>, tensor<64x1xf32>, tensor<64x1xf32>) outs(%e2 : tensor<64x1000xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = arith.mulf %d, %r : f32
    linalg.yield %v : f32
  } -> tensor<64x1000xf32>
  return %y : tensor<64x1000xf32>
}

// -----

// Softmax of a small tensor (4 x 37: waking a thread costs more than the
// work): one thread, an scf.for over the rows. The exp that both the sum
// and the division read is computed once per row, into a row of its own.
// EXPLAIN: remark: linalg.generic: g0: row kernel of 6 ops over [4] rows of [37] (one thread) [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @small_softmax_rows(
// CHECK-NOT:     scf.forall
// CHECK:         scf.for %[[ROW:.+]] = %c0 to %c4 step %c1
// CHECK:           linalg.generic {{.+}} ins(%{{.+}} : tensor<1x37xf32>)
// CHECK-SAME:        lowerline.vector_sizes = array<i64: 1, 37>
// CHECK:             arith.maximumf
// CHECK:           math.exp
// CHECK:           arith.addf
// CHECK:           arith.divf
// CHECK:           tensor.insert_slice {{.+}}[%[[ROW]], 0] [1, 37]
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#vec = affine_map<(d0, d1) -> (d0)>
func.func @small_softmax_rows(%x: tensor<4x37xf32>) -> tensor<4x37xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#id, #vec], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x37xf32>) outs(%fm : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x37xf32>
  %exp = linalg.generic {indexing_maps = [#id, #vec, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<4x37xf32>, tensor<4xf32>) outs(%e2 : tensor<4x37xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<4x37xf32>
  %e1 = tensor.empty() : tensor<4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<4x37xf32>) outs(%fs : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<4x37xf32>, tensor<4x1xf32>) outs(%e2 : tensor<4x37xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %v = arith.divf %a, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x37xf32>
  return %y : tensor<4x37xf32>
}

// -----

// Softmax over rows of 1009 (prime), divided by another input too. The
// elementwise ops are tiled four vectors wide (64 lanes) with the partial
// tile peeled: 15 full tiles in one loop, the partial one (49) after it. The division
// by the row's sum becomes a multiply by its reciprocal (computed once per
// row); the division by %w, which varies along the row, stays.
// EXPLAIN: remark: linalg.generic: g0: row kernel of 6 ops over [2] rows of [1009] (one thread) [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @wide_softmax_rows_peeled(
// CHECK:         scf.for %{{.+}} = %c0 to %c2 step %c1
// CHECK:           scf.for %{{.+}} = %c0{{.*}} to %c960{{.*}} step %c64
// CHECK:             math.exp
// CHECK:           scf.for %{{.+}} = %c960{{.*}} to %c1009{{.*}} step %c64
// CHECK:             math.exp
// CHECK:           linalg.reduce
// CHECK:           scf.for %{{.+}} = %c0{{.*}} to %c960{{.*}} step %c64
// CHECK:             ^bb0(%[[E:[^:]+]]: f32, %[[S:[^:]+]]: f32, %[[WW:[^:]+]]: f32
// CHECK:               %[[R:.+]] = arith.divf %{{.+}}, %[[S]] : f32
// CHECK:               %[[Q:.+]] = arith.mulf %[[E]], %[[R]] : f32
// CHECK:               arith.divf %[[Q]], %[[WW]] : f32
// CHECK:           scf.for %{{.+}} = %c960{{.*}} to %c1009{{.*}} step %c64
// CHECK:               arith.mulf
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#vec = affine_map<(d0, d1) -> (d0)>
func.func @wide_softmax_rows_peeled(%x: tensor<2x1009xf32>, %w: tensor<2x1009xf32>) -> tensor<2x1009xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<2xf32>) -> tensor<2xf32>
  %max = linalg.generic {indexing_maps = [#id, #vec], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x1009xf32>) outs(%fm : tensor<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<2xf32>
  %e2 = tensor.empty() : tensor<2x1009xf32>
  %exp = linalg.generic {indexing_maps = [#id, #vec, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<2x1009xf32>, tensor<2xf32>) outs(%e2 : tensor<2x1009xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<2x1009xf32>
  %e1 = tensor.empty() : tensor<2x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x1xf32>) -> tensor<2x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<2x1009xf32>) outs(%fs : tensor<2x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum, %w : tensor<2x1009xf32>, tensor<2x1xf32>, tensor<2x1009xf32>) outs(%e2 : tensor<2x1009xf32>) {
  ^bb0(%a: f32, %s: f32, %b: f32, %o: f32):
    %v = arith.divf %a, %s : f32
    %u = arith.divf %v, %b : f32
    linalg.yield %u : f32
  } -> tensor<2x1009xf32>
  return %y : tensor<2x1009xf32>
}

// -----

// Rows of two reduced dims (an instance norm's 17 x 23 planes) whose
// innermost dim fits one chunk: the plane is reduced a line at a time, into
// partial sums of two whole vectors (32 lanes), never as one 391-lane vector.
// EXPLAIN: remark: linalg.generic: g0: row kernel of 3 ops over [4] rows of [17, 23] (one thread) [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @plane_rows_reduced_a_line_at_a_time(
// CHECK:         scf.for %{{.+}} = %c0 to %c4 step %c1
// CHECK:           linalg.fill {lowerline.vector_sizes = array<i64: 1, 1, 32>}
// CHECK:           scf.for %{{.+}} = %c0{{.*}} to %c17 step %c1
// CHECK:             scf.for %{{.+}} step %c32
// CHECK:           linalg.reduce {{.+}} dimensions = [1, 2]  {lowerline.vector_sizes = array<i64: 1, 1, 32>}
// CHECK-NOT:     vector_sizes = array<i64: 1, 17, 23>
// CHECK:         return
#pid = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#prow = affine_map<(d0, d1, d2) -> (d0)>
func.func @plane_rows_reduced_a_line_at_a_time(%x: tensor<4x17x23xf32>) -> tensor<4x17x23xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#pid, #prow], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x : tensor<4x17x23xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x17x23xf32>
  %y = linalg.generic {indexing_maps = [#pid, #prow, #pid], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sum : tensor<4x17x23xf32>, tensor<4xf32>) outs(%e : tensor<4x17x23xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %v = arith.subf %a, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x17x23xf32>
  return %y : tensor<4x17x23xf32>
}

// -----

// Not a row kernel: the reduction runs along the first axis (its innermost
// loop is parallel), so the op that reads its result is not a row op.
// EXPLAIN: remark: linalg.generic: g{{[0-9]+}}: vector tile [1, 0]
// EXPLAIN-NOT: row kernel
// CHECK-LABEL: func.func @column_reduction_is_not_a_row_kernel(
// CHECK-NOT:     row kernel
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @column_reduction_is_not_a_row_kernel(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1000xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1000xf32>) -> tensor<1000xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x1000xf32>) outs(%f : tensor<1000xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1000xf32>
  %e2 = tensor.empty() : tensor<64x1000xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<64x1000xf32>, tensor<1000xf32>) outs(%e2 : tensor<64x1000xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %v = arith.divf %a, %s : f32
    linalg.yield %v : f32
  } -> tensor<64x1000xf32>
  return %y : tensor<64x1000xf32>
}

// -----

// Not a row kernel: the statistics are also returned, so they are stored
// anyway and the reduction keeps a group of its own.
// EXPLAIN-NOT: row kernel
// CHECK-LABEL: func.func @returned_statistics_are_not_fused(
// CHECK-NOT:     scf.forall
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @returned_statistics_are_not_fused(%x: tensor<4x37xf32>) -> (tensor<4x37xf32>, tensor<4x1xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x37xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %e2 = tensor.empty() : tensor<4x37xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x37xf32>, tensor<4x1xf32>) outs(%e2 : tensor<4x37xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %v = arith.subf %a, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x37xf32>
  return %y, %sum : tensor<4x37xf32>, tensor<4x1xf32>
}

// -----

// Group norm as torch-mlir gives it (a pilot, the first element of each
// group, is subtracted in the sum; the mean is pilot + sum / n), with long
// groups: 4 groups of 3 x 100000 = 300000 elements (1.2 MB, more than half
// of the 2 MiB L2), in L1 blocks of 3072 (48 KiB / 16). The two reductions become one loop of blocks over
// the group, collapsed to one row: each block summed and then its squared
// differences from its own mean and the differences themselves (which
// correct the block's mean) summed while it is in L1, the blocks merged in
// f64 by Chan's formula; the partial last block (300000 - 297984 = 2016) after
// the loop.
// EXPLAIN: remark: linalg.generic: g0: row kernel of 7 ops over [1, 4] rows of [3, 100000] (rows split across threads); variance in blocks of 3072 merged by Chan's formula [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @long_group_norm_rows(
// CHECK:         %[[ROW:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2, 3]] : tensor<1x1x3x100000xf32> into tensor<1x300000xf32>
// CHECK:         scf.for %[[B:.+]] = %{{.+}} to %c297984 step %c3072 iter_args({{.+}}) -> (f64, f64, f64)
// CHECK:           %[[BLOCK:.+]] = tensor.extract_slice %[[ROW]][0, %[[B]]] [1, 3072]
// CHECK:           scf.for {{.+}} to %c3072{{.*}} step %c64
// CHECK:             tensor.extract_slice %[[BLOCK]]
// CHECK:             arith.subf
// CHECK:             arith.addf
// CHECK:           linalg.reduce
// CHECK:           scf.for {{.+}} to %c3072{{.*}} step %c64
// CHECK:             tensor.extract_slice %[[BLOCK]]
// CHECK:             arith.subf
// CHECK:             arith.subf
// CHECK:             arith.mulf
// CHECK:           linalg.reduce
// CHECK:           scf.for {{.+}} to %c3072{{.*}} step %c64
// CHECK:             tensor.extract_slice %[[BLOCK]]
// CHECK:             arith.subf
// CHECK:             arith.subf
// CHECK-NOT:         arith.mulf
// CHECK:           linalg.reduce
// CHECK:           arith.extf {{.+}} : f32 to f64
// CHECK:           scf.yield {{.+}} : f64, f64, f64
// CHECK:         tensor.extract_slice %[[ROW]][0, %{{.+}}] [1, 2016]
// CHECK:         arith.truncf {{.+}} : f64 to f32
// CHECK-NOT:     scf.for
// CHECK:         math.rsqrt
// CHECK:         return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#grp = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @long_group_norm_rows(%x: tensor<1x4x3x100000xf32>) -> tensor<1x4x3x100000xf32> {
  %zero = arith.constant 0.0 : f32
  %zeros = arith.constant dense<0.0> : tensor<1x4x1x1xf32>
  %inf = arith.constant 0x7F800000 : f32
  %n = arith.constant 300000.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %first = tensor.extract_slice %x[0, 0, 0, 0] [1, 4, 1, 1] [1, 1, 1, 1] : tensor<1x4x3x100000xf32> to tensor<1x4x1x1xf32>
  %e1 = tensor.empty() : tensor<1x4x1x1xf32>
  %pilot = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%first, %zeros : tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) outs(%e1 : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %z: f32, %o: f32):
    %abs = math.absf %a : f32
    %finite = arith.cmpf olt, %abs, %inf : f32
    %p = arith.select %finite, %a, %z : f32
    linalg.yield %p : f32
  } -> tensor<1x4x1x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #grp, #grp], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %pilot : tensor<1x4x3x100000xf32>, tensor<1x4x1x1xf32>) outs(%f : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %p: f32, %acc: f32):
    %d = arith.subf %a, %p : f32
    %s = arith.addf %d, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x4x1x1xf32>
  %mean = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pilot, %sum : tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) outs(%e1 : tensor<1x4x1x1xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %q = arith.divf %s, %n : f32
    %m = arith.addf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<1x4x1x1xf32>
  %sq = linalg.generic {indexing_maps = [#id4, #grp, #grp], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %mean : tensor<1x4x3x100000xf32>, tensor<1x4x1x1xf32>) outs(%f : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %d2, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x4x1x1xf32>
  %rstd = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sq : tensor<1x4x1x1xf32>) outs(%e1 : tensor<1x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<1x4x1x1xf32>
  %e2 = tensor.empty() : tensor<1x4x3x100000xf32>
  %y = linalg.generic {indexing_maps = [#id4, #grp, #grp, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mean, %rstd : tensor<1x4x3x100000xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) outs(%e2 : tensor<1x4x3x100000xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = arith.mulf %d, %r : f32
    linalg.yield %v : f32
  } -> tensor<1x4x3x100000xf32>
  return %y : tensor<1x4x3x100000xf32>
}

// -----

// Group norm with one group: one row of 4 x 200001 = 800004 elements (more
// than the two cores' 2 MiB L2s hold in halves) and fewer rows than cores.
// Its 260 full blocks of 3072 are split into one run of 130 blocks per core
// (an scf.forall of 2 writing each run's (sum, mean, M2) in f64), merged in
// the runs' order after it, then the partial last block (1284); the
// normalization is split across the cores by whole channels (4 / 2).
// EXPLAIN: remark: linalg.generic: g0: row kernel of 7 ops over [1, 1] rows of [4, 200001] (one row split across 2 threads); variance in blocks of 3072 merged by Chan's formula [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @one_long_row_split(
// CHECK:         %[[ROW:.+]] = tensor.collapse_shape %{{.+}} : tensor<1x1x4x200001xf32> into tensor<1x800004xf32>
// CHECK:         %[[RUNS:.+]] = scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<2x3xf64>)
// CHECK:           scf.for {{.+}} to %c399360{{.*}} step %c3072{{.*}} iter_args({{.+}}) -> (f64, f64, f64)
// CHECK:             tensor.extract_slice %[[ROW]][0, %{{.+}}] [1, 3072]
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice {{.+}} [1, 3] [1, 1] : tensor<1x3xf64> into tensor<2x3xf64>
// CHECK:         tensor.extract %[[RUNS]]
// CHECK:         tensor.extract_slice %[[ROW]][0, %c798720] [1, 1284]
// CHECK:         math.rsqrt
// CHECK:         scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}}) -> (tensor<1x1x4x200001xf32>)
// CHECK:           scf.for {{.+}} to %c200000 step %c64
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice {{.+}} [1, 1, 2, 200001]
// CHECK:         return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#grp = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @one_long_row_split(%x: tensor<1x1x4x200001xf32>) -> tensor<1x1x4x200001xf32> {
  %zero = arith.constant 0.0 : f32
  %zeros = arith.constant dense<0.0> : tensor<1x1x1x1xf32>
  %inf = arith.constant 0x7F800000 : f32
  %n = arith.constant 800004.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %first = tensor.extract_slice %x[0, 0, 0, 0] [1, 1, 1, 1] [1, 1, 1, 1] : tensor<1x1x4x200001xf32> to tensor<1x1x1x1xf32>
  %e1 = tensor.empty() : tensor<1x1x1x1xf32>
  %pilot = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%first, %zeros : tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%e1 : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %z: f32, %o: f32):
    %abs = math.absf %a : f32
    %finite = arith.cmpf olt, %abs, %inf : f32
    %p = arith.select %finite, %a, %z : f32
    linalg.yield %p : f32
  } -> tensor<1x1x1x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #grp, #grp], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %pilot : tensor<1x1x4x200001xf32>, tensor<1x1x1x1xf32>) outs(%f : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %p: f32, %acc: f32):
    %d = arith.subf %a, %p : f32
    %s = arith.addf %d, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x1x1x1xf32>
  %mean = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pilot, %sum : tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%e1 : tensor<1x1x1x1xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %q = arith.divf %s, %n : f32
    %m = arith.addf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<1x1x1x1xf32>
  %sq = linalg.generic {indexing_maps = [#id4, #grp, #grp], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %mean : tensor<1x1x4x200001xf32>, tensor<1x1x1x1xf32>) outs(%f : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %d2, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x1x1x1xf32>
  %rstd = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sq : tensor<1x1x1x1xf32>) outs(%e1 : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<1x1x1x1xf32>
  %e2 = tensor.empty() : tensor<1x1x4x200001xf32>
  %y = linalg.generic {indexing_maps = [#id4, #grp, #grp, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mean, %rstd : tensor<1x1x4x200001xf32>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%e2 : tensor<1x1x4x200001xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = arith.mulf %d, %r : f32
    linalg.yield %v : f32
  } -> tensor<1x1x4x200001xf32>
  return %y : tensor<1x1x4x200001xf32>
}

// -----

// Not split within the row: one row of 3 x 100000 = 300000 elements, more
// than half of one L2 but less than the two cores' L2s hold in halves: op
// by op, each core's share of each sweep stays in its L2.
// EXPLAIN-NOT: row kernel
// CHECK-LABEL: func.func @one_row_held_by_the_l2s_in_halves(
// CHECK-NOT:     tensor<2x3xf64>
// CHECK:         scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}}) -> (tensor<1x1x2xf32>)
// CHECK-NOT:     tensor<2x3xf64>
// CHECK:         return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#grp = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @one_row_held_by_the_l2s_in_halves(%x: tensor<1x1x3x100000xf32>) -> tensor<1x1x3x100000xf32> {
  %zero = arith.constant 0.0 : f32
  %zeros = arith.constant dense<0.0> : tensor<1x1x1x1xf32>
  %inf = arith.constant 0x7F800000 : f32
  %n = arith.constant 300000.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %first = tensor.extract_slice %x[0, 0, 0, 0] [1, 1, 1, 1] [1, 1, 1, 1] : tensor<1x1x3x100000xf32> to tensor<1x1x1x1xf32>
  %e1 = tensor.empty() : tensor<1x1x1x1xf32>
  %pilot = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%first, %zeros : tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%e1 : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %z: f32, %o: f32):
    %abs = math.absf %a : f32
    %finite = arith.cmpf olt, %abs, %inf : f32
    %p = arith.select %finite, %a, %z : f32
    linalg.yield %p : f32
  } -> tensor<1x1x1x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #grp, #grp], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %pilot : tensor<1x1x3x100000xf32>, tensor<1x1x1x1xf32>) outs(%f : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %p: f32, %acc: f32):
    %d = arith.subf %a, %p : f32
    %s = arith.addf %d, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x1x1x1xf32>
  %mean = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pilot, %sum : tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%e1 : tensor<1x1x1x1xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %q = arith.divf %s, %n : f32
    %m = arith.addf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<1x1x1x1xf32>
  %sq = linalg.generic {indexing_maps = [#id4, #grp, #grp], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %mean : tensor<1x1x3x100000xf32>, tensor<1x1x1x1xf32>) outs(%f : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %d2, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x1x1x1xf32>
  %rstd = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sq : tensor<1x1x1x1xf32>) outs(%e1 : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<1x1x1x1xf32>
  %e2 = tensor.empty() : tensor<1x1x3x100000xf32>
  %y = linalg.generic {indexing_maps = [#id4, #grp, #grp, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mean, %rstd : tensor<1x1x3x100000xf32>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%e2 : tensor<1x1x3x100000xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = arith.mulf %d, %r : f32
    linalg.yield %v : f32
  } -> tensor<1x1x3x100000xf32>
  return %y : tensor<1x1x3x100000xf32>
}

// -----

// One row of 600001 (odd): 195 full blocks, two runs of 97 split across
// the cores, the 195th block after them on one thread, then the partial
// last block (961). No dim of the normalization divides between the cores:
// it runs on one thread (no scf.forall after the moments).
// EXPLAIN: remark: linalg.generic: g0: row kernel of 7 ops over [1, 1] rows of [1, 600001] (one row split across 2 threads); variance in blocks of 3072 merged by Chan's formula [lowerline-tile-and-fuse]
// CHECK-LABEL: func.func @one_long_row_odd_length(
// CHECK:         scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}}) -> (tensor<2x3xf64>)
// CHECK:           scf.for {{.+}} to %c297984{{.*}} step %c3072
// CHECK:         scf.for {{.+}} = %c595968 to %c599040 step %c3072
// CHECK:         tensor.extract_slice %{{.+}}[0, %c599040{{.*}}] [1, 961]
// CHECK-NOT:     scf.forall
// CHECK:         return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#grp = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @one_long_row_odd_length(%x: tensor<1x1x1x600001xf32>) -> tensor<1x1x1x600001xf32> {
  %zero = arith.constant 0.0 : f32
  %zeros = arith.constant dense<0.0> : tensor<1x1x1x1xf32>
  %inf = arith.constant 0x7F800000 : f32
  %n = arith.constant 600001.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %first = tensor.extract_slice %x[0, 0, 0, 0] [1, 1, 1, 1] [1, 1, 1, 1] : tensor<1x1x1x600001xf32> to tensor<1x1x1x1xf32>
  %e1 = tensor.empty() : tensor<1x1x1x1xf32>
  %pilot = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%first, %zeros : tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%e1 : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %z: f32, %o: f32):
    %abs = math.absf %a : f32
    %finite = arith.cmpf olt, %abs, %inf : f32
    %p = arith.select %finite, %a, %z : f32
    linalg.yield %p : f32
  } -> tensor<1x1x1x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #grp, #grp], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %pilot : tensor<1x1x1x600001xf32>, tensor<1x1x1x1xf32>) outs(%f : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %p: f32, %acc: f32):
    %d = arith.subf %a, %p : f32
    %s = arith.addf %d, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x1x1x1xf32>
  %mean = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pilot, %sum : tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%e1 : tensor<1x1x1x1xf32>) {
  ^bb0(%p: f32, %s: f32, %o: f32):
    %q = arith.divf %s, %n : f32
    %m = arith.addf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<1x1x1x1xf32>
  %sq = linalg.generic {indexing_maps = [#id4, #grp, #grp], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %mean : tensor<1x1x1x600001xf32>, tensor<1x1x1x1xf32>) outs(%f : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %s = arith.addf %d2, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x1x1x1xf32>
  %rstd = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sq : tensor<1x1x1x1xf32>) outs(%e1 : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.divf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    linalg.yield %r : f32
  } -> tensor<1x1x1x1xf32>
  %e2 = tensor.empty() : tensor<1x1x1x600001xf32>
  %y = linalg.generic {indexing_maps = [#id4, #grp, #grp, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mean, %rstd : tensor<1x1x1x600001xf32>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%e2 : tensor<1x1x1x600001xf32>) {
  ^bb0(%a: f32, %m: f32, %r: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = arith.mulf %d, %r : f32
    linalg.yield %v : f32
  } -> tensor<1x1x1x600001xf32>
  return %y : tensor<1x1x1x600001xf32>
}
