// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-drop-dead-results))" \
// RUN:   --split-input-file | FileCheck %s

// torch-mlir's row maximum (aten.max.dim): the maximum and its index. Nothing
// reads the index: it goes, with its init and the index, compare and select
// that computed it, leaving a plain max reduction.
// CHECK-LABEL: func.func @drops_unused_index_of_max(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<4x128xf32>)
// CHECK:         %[[INIT:.+]] = linalg.fill ins(%{{.+}} : f32)
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[X]] : tensor<4x128xf32>) outs(%[[INIT]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.+]]: f32, %[[OUT:.+]]: f32):
// CHECK-NEXT:      %[[M:.+]] = arith.maximumf %[[IN]], %[[OUT]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK-NEXT:    } -> tensor<4xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4xf32>
#row = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @drops_unused_index_of_max(%x: tensor<4x128xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0 : i64
  %low = arith.constant -3.0e+38 : f32
  %ei = tensor.empty() : tensor<4xi64>
  %i0 = linalg.fill ins(%zero : i64) outs(%ei : tensor<4xi64>) -> tensor<4xi64>
  %em = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%low : f32) outs(%em : tensor<4xf32>) -> tensor<4xf32>
  %r:2 = linalg.generic {indexing_maps = [#row, #red, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x128xf32>) outs(%m0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %out_index: i64):
    %index = linalg.index 1 : index
    %cast = arith.index_cast %index : index to i64
    %max = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %cast, %out_index : i64
    linalg.yield %max, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0 : tensor<4xf32>
}

// -----

// An argmax whose index is returned keeps both results.
// CHECK-LABEL: func.func @keeps_a_used_index(
// CHECK:         %{{.+}}:2 = linalg.generic
// CHECK:           arith.select
// CHECK:           linalg.yield %{{.+}}, %{{.+}} : f32, i64
#row = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @keeps_a_used_index(%x: tensor<4x128xf32>, %m0: tensor<4xf32>, %i0: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  %r:2 = linalg.generic {indexing_maps = [#row, #red, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x128xf32>) outs(%m0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %out_index: i64):
    %index = linalg.index 1 : index
    %cast = arith.index_cast %index : index to i64
    %max = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %cast, %out_index : i64
    linalg.yield %max, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xi64>
}

// -----

// An unused result whose init the kept result reads stays: dropping it would
// change what the kept one computes.
// CHECK-LABEL: func.func @keeps_an_init_the_rest_reads(
// CHECK:         %{{.+}}:2 = linalg.generic
// CHECK:           linalg.yield %{{.+}}, %{{.+}} : f32, f32
#id = affine_map<(d0) -> (d0)>
func.func @keeps_an_init_the_rest_reads(%x: tensor<8xf32>, %a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%a, %b : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%in: f32, %oa: f32, %ob: f32):
    %s = arith.addf %in, %ob : f32
    %t = arith.mulf %in, %ob : f32
    linalg.yield %s, %t : f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>)
  return %r#0 : tensor<8xf32>
}

// -----

// A value yielded twice, once for an unused result: the result goes, the op
// that computes the value stays for the other.
// CHECK-LABEL: func.func @keeps_a_shared_value(
// CHECK-SAME:      %{{.+}}: tensor<8xf32>, %{{.+}}: tensor<8xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>)
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:        outs(%[[B]] : tensor<8xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[IN]] : f32
// CHECK-NEXT:      linalg.yield %[[E]] : f32
// CHECK-NEXT:    } -> tensor<8xf32>
// CHECK-NEXT:    return %[[R]] : tensor<8xf32>
#id = affine_map<(d0) -> (d0)>
func.func @keeps_a_shared_value(%x: tensor<8xf32>, %a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%a, %b : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%in: f32, %oa: f32, %ob: f32):
    %e = math.exp %in : f32
    linalg.yield %e, %e : f32, f32
  } -> (tensor<8xf32>, tensor<8xf32>)
  return %r#1 : tensor<8xf32>
}
