// Reductions across the cores in lowerline-tile-and-fuse
// (passes/tiling/thread_reductions.py): a reduced loop split across the
// threads where no parallel loop feeds them, columns outside rows for
// reductions along a non-contiguous axis.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>%t | FileCheck %s
// RUN: FileCheck %s --input-file=%t --check-prefix=EXPLAIN

// 4096x16 summed over dim 0: 16 columns are less than a vector per core,
// so the 4096 rows are split across the two cores (partial results 16x2,
// combined by a linalg.reduce); each thread accumulates whole rows of 16.
// EXPLAIN: remark: linalg.generic: g1: vector tile [1, 16], reduction split across threads [2, 0], loop order [1, 0]
// CHECK-LABEL: func.func @first_axis_narrow_splits_rows(
// CHECK:         linalg.fill {{.+}} -> tensor<16x2xf32>
// CHECK:         scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}}) -> (tensor<16x2xf32>)
// CHECK:           scf.for
// CHECK:             scf.for {{.+}} to %c2048 step %c1
// CHECK:               linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]
// CHECK-SAME:            lowerline.vector_sizes = array<i64: 1, 16>
// CHECK:         linalg.reduce ins(%{{.+}} : tensor<16x2xf32>) {{.+}} dimensions = [1]
// CHECK-SAME:      lowerline.vector_sizes = array<i64: 16, 2>
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @first_axis_narrow_splits_rows(%x: tensor<4096x16xf32>) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<4096x16xf32>) outs(%f : tensor<16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %s : tensor<16xf32>
}

// -----

// 129x4099 summed over dim 0: the columns are split across the cores in
// whole tiles of 128 (2176 = 17 x 128 for the first), each tile reduced
// over the 129 rows inside it (accumulators invariant in the row loop); the
// partial last tile is peeled.
// EXPLAIN: remark: linalg.generic: g1: vector tile [1, 128], parallel tile [0, 2176], loop order [1, 0]
// CHECK-LABEL: func.func @first_axis_wide_columns_outside(
// CHECK:         scf.forall (%{{.+}}) in (2)
// CHECK:           scf.for {{.+}} step %c128
// CHECK:             scf.for {{.+}} to %c129 step %c1
// CHECK:               linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]
// CHECK-SAME:            lowerline.vector_sizes = array<i64: 1, 128>
// CHECK:           scf.for {{.+}} step %c128
// CHECK:             scf.for {{.+}} to %c129 step %c1
// CHECK:               linalg.generic {{.+}} iterator_types = ["reduction", "parallel"]
// CHECK-NOT:     linalg.reduce
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @first_axis_wide_columns_outside(%x: tensor<129x4099xf32>) -> tensor<4099xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4099xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4099xf32>) -> tensor<4099xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<129x4099xf32>) outs(%f : tensor<4099xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4099xf32>
  return %s : tensor<4099xf32>
}

// -----

// One row of 50257: its maximum is split across the cores (a half row
// each, partial results 1x2), each half reduced in chunks of 64 (peeled:
// the halves' lengths are dynamic).
// CHECK-LABEL: func.func @long_row_splits_across_threads(
// CHECK:         scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}}) -> (tensor<1x2xf32>)
// CHECK:           tensor.extract_slice %{{.+}} : tensor<1x50257xf32> to tensor<1x?xf32>
// CHECK:           scf.for {{.+}} step %c64
// CHECK:             linalg.generic {{.+}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME:          lowerline.vector_sizes = array<i64: 1, 64>
// CHECK:             arith.maximumf
// CHECK:           scf.for {{.+}} step %c64
// CHECK:           linalg.reduce ins(%{{.+}} : tensor<1x64xf32>)
// CHECK:         linalg.reduce ins(%{{.+}} : tensor<1x2xf32>)
// CHECK-SAME:      lowerline.vector_sizes = array<i64: 1, 2>
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @long_row_splits_across_threads(%x: tensor<1x50257xf32>) -> tensor<1xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<1xf32>) -> tensor<1xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<1x50257xf32>) outs(%f : tensor<1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1xf32>
  return %m : tensor<1xf32>
}

// -----

// 64 rows of 4096: enough rows for the cores, no reduced loop is split.
// EXPLAIN: remark: linalg.generic: g1: vector tile [1, 0], parallel tile [32, 0], reduced in chunks [0, 64]
// CHECK-LABEL: func.func @many_rows_split_rows_not_reductions(
// CHECK:         scf.forall (%{{.+}}) in (2)
// CHECK-NOT:     tensor<64x2xf32>
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @many_rows_split_rows_not_reductions(%x: tensor<64x4096xf32>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x4096xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  return %s : tensor<64xf32>
}

// -----

// 7x13 over dim 0: too small for threads; columns still outside the rows.
// CHECK-LABEL: func.func @small_first_axis_one_thread(
// CHECK-NOT:     scf.forall
// CHECK:         scf.for {{.+}} step %c13
// CHECK:           scf.for {{.+}} to %c7 step %c1
// CHECK:             linalg.generic
// CHECK-SAME:        lowerline.vector_sizes = array<i64: 1, 13>
// CHECK-NOT:     linalg.reduce
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @small_first_axis_one_thread(%x: tensor<7x13xf32>) -> tensor<13xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<13xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<13xf32>) -> tensor<13xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<7x13xf32>) outs(%f : tensor<13xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<13xf32>
  return %s : tensor<13xf32>
}

// -----

// A reduction reading linalg.index (an argmax's index) is not split across
// threads (each part would count from 0): one thread, columns outside.
// CHECK-LABEL: func.func @index_reduction_not_split(
// CHECK-NOT:     scf.forall
// CHECK:         scf.for {{.+}} to %c4096 step %c1
// CHECK:           linalg.index
// CHECK-NOT:     linalg.reduce
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @index_reduction_not_split(%x: tensor<4096x16xi64>) -> tensor<16xi64> {
  %big = arith.constant 9223372036854775807 : i64
  %e = tensor.empty() : tensor<16xi64>
  %f = linalg.fill ins(%big : i64) outs(%e : tensor<16xi64>) -> tensor<16xi64>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<4096x16xi64>) outs(%f : tensor<16xi64>) {
  ^bb0(%a: i64, %acc: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %v = arith.addi %a, %ii : i64
    %r = arith.minsi %v, %acc : i64
    linalg.yield %r : i64
  } -> tensor<16xi64>
  return %s : tensor<16xi64>
}

// -----

// Every dim reduced into a 1x1 output indexed by constants (torch's
// variance of a whole tensor, with its shift operand): the output is
// collapsed to a 0-d tensor, so the reduction is split across the threads
// and each thread's part is reduced in chunks of 64, not as one vector of
// the whole tensor.
// EXPLAIN: remark: linalg.generic: g1: vector tile [0, 0], reduction split across threads [2, 0], reduced in chunks [1, 64]
// CHECK-LABEL: func.func @whole_tensor_into_unit_output(
// CHECK:         tensor.collapse_shape %{{.+}} [] : tensor<1x1xf32> into tensor<f32>
// CHECK:         scf.forall (%{{.+}}) in (2)
// CHECK:           scf.for {{.+}} to %c512 step %c1
// CHECK:             scf.for {{.+}} to %c1536 step %c64
// CHECK:               linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<1x64xf32>, tensor<1x1xf32>)
// CHECK-SAME:            lowerline.vector_sizes = array<i64: 1, 64>
// CHECK:         linalg.reduce ins(%{{.+}} : tensor<2xf32>)
// CHECK:         tensor.expand_shape %{{.+}} [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#unit = affine_map<(d0, d1) -> (0, 0)>
func.func @whole_tensor_into_unit_output(%x: tensor<1024x1536xf32>, %shift: tensor<1x1xf32>) -> tensor<1x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1xf32>) -> tensor<1x1xf32>
  %s = linalg.generic {indexing_maps = [#id, #unit, #unit], iterator_types = ["reduction", "reduction"]}
      ins(%x, %shift : tensor<1024x1536xf32>, tensor<1x1xf32>) outs(%f : tensor<1x1xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %d = arith.subf %a, %m : f32
    %q = arith.mulf %d, %d : f32
    %r = arith.addf %q, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x1xf32>
  return %s : tensor<1x1xf32>
}
