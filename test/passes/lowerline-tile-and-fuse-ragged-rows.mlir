// Elementwise ops whose rows are not a whole number of vector tiles: the
// partial last tile of each row is peeled, so the full tiles are static and
// unmasked. Before, every tile of the row was a masked step (exp of
// 64x50257 on one thread: 3.4-3.9 ms of CPU time, 0.6-0.8 ms peeled).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},canonicalize)" \
// RUN:   --split-input-file | FileCheck %s

// 50257 = 785 tiles of 64 and 17 left: a loop over the full tiles (static
// 1x64 slices), then the 17 left (its one-iteration loop folded away).
// CHECK-LABEL: func.func @ragged_row_peels_last_tile(
// CHECK:         scf.forall (%{{.+}}) in (2)
// CHECK:           scf.for {{.+}} to %c32 step %c1
// CHECK:             scf.for {{.+}} = %c0 to %c50240 step %c64
// CHECK:               linalg.generic {{.+}} ins(%{{.+}} : tensor<1x64xf32>) outs(%{{.+}} : tensor<1x64xf32>)
// CHECK:             }
// CHECK:             linalg.generic {{.+}} ins(%{{.+}} : tensor<1x17xf32>) outs(%{{.+}} : tensor<1x17xf32>)
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @ragged_row_peels_last_tile(%x: tensor<64x50257xf32>) -> tensor<64x50257xf32> {
  %e = tensor.empty() : tensor<64x50257xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x50257xf32>) outs(%e : tensor<64x50257xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<64x50257xf32>
  return %r : tensor<64x50257xf32>
}

// -----

// Rows of whole tiles (50240 = 785 x 64): one loop, nothing peeled.
// CHECK-LABEL: func.func @whole_tiles_not_peeled(
// CHECK:         scf.for {{.+}} = %c0 to %c50240 step %c64
// CHECK:           linalg.generic {{.+}} ins(%{{.+}} : tensor<1x64xf32>) outs(%{{.+}} : tensor<1x64xf32>)
// CHECK:           scf.yield
// CHECK-NOT:     tensor<1x{{[0-9?]+}}xf32>
// CHECK:         scf.forall.in_parallel
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @whole_tiles_not_peeled(%x: tensor<64x50240xf32>) -> tensor<64x50240xf32> {
  %e = tensor.empty() : tensor<64x50240xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x50240xf32>) outs(%e : tensor<64x50240xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<64x50240xf32>
  return %r : tensor<64x50240xf32>
}
