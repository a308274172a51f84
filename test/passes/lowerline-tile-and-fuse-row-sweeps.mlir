// Softmax in three sweeps over each row (max; exp written and summed;
// scale): the row kernel of lowerline-tile-and-fuse computes the exp that
// both the sum and the division read inside the sum as well, tiles both in
// the same chunks, and lowerline-fuse-row-sweeps merges the two chunk
// loops (CSE keeps one exp). A row of one chunk or less keeps the sum
// reading the exp: there is no loop to merge.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize{target=sapphirerapids},canonicalize,cse,lowerline-fuse-row-sweeps,cse)" \
// RUN:   --split-input-file | FileCheck %s

// 4 rows of 1000: chunks of 64, peeled (1000 = 15 x 64 + 40).
// CHECK-LABEL: func.func @wide_softmax_three_sweeps(
// CHECK:         scf.for %[[ROW:.+]] = %c0 to %c4 step %c1
// CHECK:           scf.for {{.+}} to %c960 step %c64 iter_args(%{{.+}}) -> (vector<1x64xf32>)
// CHECK:             arith.maximumf
// CHECK:           vector.reduction <maximumf>
// CHECK:           scf.for {{.+}} to %c960 step %c64 iter_args(%{{.+}}, %{{.+}}) -> (vector<1x1x64xf32>, tensor<1x1000xf32>)
// CHECK:             %[[E:.+]] = math.exp
// CHECK-NOT:         math.exp
// CHECK-DAG:         arith.addf %[[E]]
// CHECK-DAG:         vector.transfer_write %[[E]]
// CHECK:           math.exp
// CHECK:           vector.reduction <add>
// CHECK-NOT:       math.exp
// CHECK:           scf.for
// CHECK:             arith.mulf
// CHECK-NOT:     scf.for
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#vec = affine_map<(d0, d1) -> (d0)>
func.func @wide_softmax_three_sweeps(%x: tensor<4x1000xf32>) -> tensor<4x1000xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#id, #vec], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x1000xf32>) outs(%fm : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x1000xf32>
  %exp = linalg.generic {indexing_maps = [#id, #vec, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<4x1000xf32>, tensor<4xf32>) outs(%e2 : tensor<4x1000xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<4x1000xf32>
  %e1 = tensor.empty() : tensor<4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<4x1000xf32>) outs(%fs : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<4x1000xf32>, tensor<4x1xf32>) outs(%e2 : tensor<4x1000xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %v = arith.divf %a, %s : f32
    linalg.yield %v : f32
  } -> tensor<4x1000xf32>
  return %y : tensor<4x1000xf32>
}

// -----

// 4 rows of 37: each row one vector step, the sum reads the exp.
// CHECK-LABEL: func.func @short_softmax_rows_kept(
// CHECK:         %[[E:.+]] = math.exp
// CHECK-NOT:     math.exp
// CHECK:         vector.reduction <add>, %[[E]]
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#vec = affine_map<(d0, d1) -> (d0)>
func.func @short_softmax_rows_kept(%x: tensor<4x37xf32>) -> tensor<4x37xf32> {
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

// 8 rows of 4096, split across the threads: the exp is written straight
// into the output row (the forall's shared output) in the sweep that sums
// it, and the scale sweep multiplies that row in place: no row buffer per
// thread, and the last sweep reads and writes one row.
// CHECK-LABEL: func.func @softmax_in_place(
// CHECK:         scf.forall (%[[ROW:.+]]) in (8) shared_outs(%[[OUT:.+]] = %{{.+}})
// CHECK:           %[[DEST:.+]] = tensor.extract_slice %[[OUT]][%[[ROW]], 0] [1, 4096]
// CHECK:           %[[SWEEP:.+]]:2 = scf.for {{.+}} iter_args(%[[E:.+]] = %[[DEST]], %{{.+}}) -> (tensor<1x4096xf32>, vector<1x1x64xf32>)
// CHECK:             %[[EXP:.+]] = math.exp
// CHECK:             vector.transfer_write %[[EXP]], %[[E]]
// CHECK:           vector.reduction <add>
// CHECK:           scf.for {{.+}} iter_args(%[[Y:.+]] = %[[SWEEP]]#0) -> (tensor<1x4096xf32>)
// CHECK:             %[[V:.+]] = vector.transfer_read %[[Y]]
// CHECK:             %[[S:.+]] = arith.mulf %[[V]]
// CHECK:             vector.transfer_write %[[S]], %[[Y]]
// CHECK-NOT:       tensor.empty() : tensor<1x4096xf32>
// CHECK:           scf.forall.in_parallel
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#vec = affine_map<(d0, d1) -> (d0)>
func.func @softmax_in_place(%x: tensor<8x4096xf32>) -> tensor<8x4096xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<8xf32>) -> tensor<8xf32>
  %max = linalg.generic {indexing_maps = [#id, #vec], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x4096xf32>) outs(%fm : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8x4096xf32>
  %exp = linalg.generic {indexing_maps = [#id, #vec, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<8x4096xf32>, tensor<8xf32>) outs(%e2 : tensor<8x4096xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  } -> tensor<8x4096xf32>
  %e1 = tensor.empty() : tensor<8x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x1xf32>) -> tensor<8x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<8x4096xf32>) outs(%fs : tensor<8x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<8x4096xf32>, tensor<8x1xf32>) outs(%e2 : tensor<8x4096xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %v = arith.divf %a, %s : f32
    linalg.yield %v : f32
  } -> tensor<8x4096xf32>
  return %y : tensor<8x4096xf32>
}
