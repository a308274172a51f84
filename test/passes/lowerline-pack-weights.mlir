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
