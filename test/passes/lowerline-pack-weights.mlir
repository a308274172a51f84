// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},func.func(lowerline-pack-weights))" \
// RUN:   --split-input-file | FileCheck %s

// A constant B (K = 4, N = 64) read in 1x32 rows by the 8x32 register tiles
// of Sapphire Rapids is stored once as [N / 32, K, 32] panels; each k step of
// a register tile reads row k of panel (n floordiv 32). B[k, n] is 4 * (n floordiv 32) + k,
// plus 0.5 in the first column of each panel: the packed blob is panel 0
// rows 0..3 (values 0..3), then panel 1 rows 0..3 (values 4..7).
// CHECK-DAG:   #[[$PANEL:.+]] = affine_map<()[s0, s1] -> ((s0 + s1) floordiv 32)>
// CHECK-DAG:   #[[$ROW:.+]] = affine_map<()[s0] -> (s0)>
// CHECK-LABEL: func.func @packs_constant_b(
// CHECK-NEXT:    %[[P:.+]] = arith.constant dense_resource<[[NAME:lowerline_weight[0-9]+\.p32]]> : tensor<2x4x32xf32>
// CHECK:         scf.forall (%{{.+}}, %[[FJ:[a-z0-9_]+]]) in (1, 2)
// CHECK:           %[[N0:.+]] = affine.apply #{{.+}}(%[[FJ]])
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(
// CHECK:             scf.for %[[J:[a-z0-9_]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(
// CHECK:               linalg.fill {{.+}} -> tensor<8x32xf32>
// CHECK:               scf.for %[[K:[a-z0-9_]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(
// CHECK:                 %[[PI:.+]] = affine.apply #[[$PANEL]]()[%[[J]], %[[N0]]]
// CHECK-NEXT:            %[[KI:.+]] = affine.apply #[[$ROW]]()[%[[K]]]
// CHECK-NEXT:            %[[Z:.+]] = arith.constant 0 : index
// CHECK-NEXT:            %[[BT:.+]] = tensor.extract_slice %[[P]][%[[PI]], %[[KI]], %[[Z]]] [1, 1, 32] [1, 1, 1] : tensor<2x4x32xf32> to tensor<1x32xf32>
// CHECK-NEXT:            linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 1>} ins(%{{.+}}, %[[BT]] : tensor<8x1xf32>, tensor<1x32xf32>)
// CHECK:       dialect_resources
// CHECK:         [[NAME]]: "0x40000000
// CHECK-SAME:      0000003F{{(00000000){31}()}}
// CHECK-SAME:      0000C03F{{(0000803F){31}()}}
// CHECK-SAME:      00002040{{(00000040){31}()}}
// CHECK-SAME:      00006040{{(00004040){31}()}}
// CHECK-SAME:      00009040{{(00008040){31}()}}
// CHECK-SAME:      0000B040{{(0000A040){31}()}}
// CHECK-SAME:      0000D040{{(0000C040){31}()}}
// CHECK-SAME:      0000F040{{(0000E040){31}()}}"
func.func @packs_constant_b(%a: tensor<8x4xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[
      [0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
       0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
       4.5, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0,
       4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0],
      [1.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
       1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
       5.5, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0,
       5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0],
      [2.5, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0,
       2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0,
       6.5, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0,
       6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0],
      [3.5, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0,
       3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0,
       7.5, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0,
       7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0]]> : tensor<4x64xf32>
  %e = tensor.empty() : tensor<8x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<8x4xf32>, tensor<4x64xf32>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %mm : tensor<8x64xf32>
}

// -----

// Two matmuls reading the same weight share one packed copy.
// CHECK-LABEL: func.func @packs_shared_weight_once(
// CHECK-NEXT:    %[[P:.+]] = arith.constant dense_resource<{{.+}}> : tensor<2x4x32xf32>
// CHECK-NOT:     arith.constant dense_resource
// CHECK:         tensor.extract_slice %[[P]][{{.+}}] [1, 1, 32] [1, 1, 1] : tensor<2x4x32xf32> to tensor<1x32xf32>
// CHECK:         tensor.extract_slice %[[P]][{{.+}}] [1, 1, 32] [1, 1, 1] : tensor<2x4x32xf32> to tensor<1x32xf32>
// CHECK:         return
func.func @packs_shared_weight_once(%a: tensor<8x4xf32>, %a2: tensor<8x4xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %wb = arith.constant dense<1.5> : tensor<4x64xf32>
  %e = tensor.empty() : tensor<8x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %mm = linalg.matmul ins(%a, %wb : tensor<8x4xf32>, tensor<4x64xf32>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %mm2 = linalg.matmul ins(%a2, %wb : tensor<8x4xf32>, tensor<4x64xf32>) outs(%f2 : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %mm, %mm2 : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// B is a function argument: nothing to pack, the tile reads B's rows.
// CHECK-LABEL: func.func @keeps_argument_b(
// CHECK-SAME:      %{{.+}}: tensor<8x4xf32>, %[[W:[a-z0-9]+]]: tensor<4x64xf32>)
// CHECK-NOT:     dense_resource
// CHECK:         %[[BS:.+]] = tensor.extract_slice %[[W]][0, %{{.+}}] [4, 32] [1, 1] : tensor<4x64xf32> to tensor<4x32xf32>
// CHECK-NOT:     floordiv
// CHECK:         linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 1>} ins(%{{.+}}, %{{.+}} : tensor<8x1xf32>, tensor<1x32xf32>)
// CHECK-NOT:     dialect_resources
func.func @keeps_argument_b(%a: tensor<8x4xf32>, %w: tensor<4x64xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<8x4xf32>, tensor<4x64xf32>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %mm : tensor<8x64xf32>
}

// -----

// N = 48 is not a multiple of nr = 32: the partial register tile is peeled
// (16 columns: tensor<1x16xf32> slices of B) and the weight is left as it is.
// CHECK-LABEL: func.func @keeps_n_not_multiple_of_nr(
// CHECK:         %[[W:.+]] = arith.constant dense<1.000000e+00> : tensor<4x48xf32>
// CHECK-NOT:     dense_resource
// CHECK-NOT:     floordiv
// CHECK:         linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 1>} ins(%{{.+}}, %{{.+}} : tensor<8x1xf32>, tensor<1x32xf32>)
// CHECK:         linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 1>} ins(%{{.+}}, %{{.+}} : tensor<8x1xf32>, tensor<1x16xf32>)
// CHECK-NOT:     dialect_resources
func.func @keeps_n_not_multiple_of_nr(%a: tensor<8x4xf32>) -> tensor<8x48xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<4x48xf32>
  %e = tensor.empty() : tensor<8x48xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x48xf32>) -> tensor<8x48xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<8x4xf32>, tensor<4x48xf32>) outs(%f : tensor<8x48xf32>) -> tensor<8x48xf32>
  return %mm : tensor<8x48xf32>
}

// -----

// N = nr = 32: B is a single panel already, nothing to pack.
// CHECK-LABEL: func.func @keeps_single_panel(
// CHECK-NOT:     dense_resource
// CHECK-NOT:     floordiv
// CHECK:         linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 1>} ins(%{{.+}}, %{{.+}} : tensor<8x1xf32>, tensor<1x32xf32>)
// CHECK-NOT:     dialect_resources
func.func @keeps_single_panel(%a: tensor<8x4xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<4x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<8x4xf32>, tensor<4x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %mm : tensor<8x32xf32>
}

// -----

// A dense_resource weight whose blob is not in the file: its bytes are
// unknown, the weight is left as it is.
// CHECK-LABEL: func.func @keeps_elided_weight(
// CHECK:         arith.constant dense_resource<elided_b> : tensor<4x64xf32>
// CHECK-NOT:     tensor<2x4x32xf32>
// CHECK-NOT:     floordiv
// CHECK:         linalg.matmul {lowerline.contract, lowerline.vector_sizes = array<i64: 8, 32, 1>} ins(%{{.+}}, %{{.+}} : tensor<8x1xf32>, tensor<1x32xf32>)
func.func @keeps_elided_weight(%a: tensor<8x4xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense_resource<elided_b> : tensor<4x64xf32>
  %e = tensor.empty() : tensor<8x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %mm = linalg.matmul ins(%a, %w : tensor<8x4xf32>, tensor<4x64xf32>) outs(%f : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %mm : tensor<8x64xf32>
}

// -----

// A matmul over dynamic rows: its full 8x32 register tiles read packed
// panels, and so do its remainder pieces of 7 to 4 rows, which keep the
// 32-column width. The smaller ones, widened along N (3x64, 2x64, 1x64
// here), read their k x 64 panel once: the 3- and 2-row pieces read the
// rows of the original B (no packed copy per piece width); the 1-row piece,
// all a batch of 1 runs, reads a [N / 64, K, 64] copy (packed: the static
// batch-1 build's time; row by row at a stride of N: 1.6x that).
// CHECK-LABEL: func.func @packs_only_the_one_row_piece(
// CHECK:         %[[P64:.+]] = arith.constant dense_resource<{{lowerline_weight[0-9]+}}.p64> : tensor<2x1x64xf32>
// CHECK:         %[[P:.+]] = arith.constant dense_resource<{{lowerline_weight[0-9]+}}.p32> : tensor<4x1x32xf32>
// CHECK:         %[[W:.+]] = arith.constant dense<"0x{{.+}}"> : tensor<1x128xf32>
// CHECK:         %[[WT:.+]] = tensor.extract_slice %[[W]][0, %{{.+}}] [1, 64] [1, 1] : tensor<1x128xf32> to tensor<1x64xf32>
// CHECK:         tensor.extract_slice %[[P]]{{.+}} : tensor<4x1x32xf32> to tensor<1x32xf32>
// CHECK:         linalg.matmul {{.+}} : tensor<8x1xf32>, tensor<1x32xf32>)
// CHECK:         tensor.extract_slice %[[P]]{{.+}} : tensor<4x1x32xf32> to tensor<1x32xf32>
// CHECK:         linalg.matmul {{.+}} : tensor<7x1xf32>, tensor<1x32xf32>)
// CHECK:         tensor.extract_slice %[[P]]{{.+}} : tensor<4x1x32xf32> to tensor<1x32xf32>
// CHECK:         linalg.matmul {{.+}} : tensor<4x1xf32>, tensor<1x32xf32>)
// CHECK:         tensor.extract_slice %[[WT]]
// CHECK:         linalg.matmul {{.+}} : tensor<3x1xf32>, tensor<1x64xf32>)
// CHECK:         tensor.extract_slice %[[WT]]
// CHECK:         linalg.matmul {{.+}} : tensor<2x1xf32>, tensor<1x64xf32>)
// CHECK:         tensor.extract_slice %[[P64]]{{.+}} : tensor<2x1x64xf32> to tensor<1x64xf32>
// CHECK:         linalg.matmul {{.+}} : tensor<1x1xf32>, tensor<1x64xf32>)
// CHECK-NOT:     .p128
func.func @packs_only_the_one_row_piece(%a: tensor<?x1xf32>) -> tensor<?x128xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0]]> : tensor<1x128xf32>
  %m = tensor.dim %a, %c0 : tensor<?x1xf32>
  %e = tensor.empty(%m) : tensor<?x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %r = linalg.matmul ins(%a, %w : tensor<?x1xf32>, tensor<1x128xf32>) outs(%f : tensor<?x128xf32>) -> tensor<?x128xf32>
  return %r : tensor<?x128xf32>
}
