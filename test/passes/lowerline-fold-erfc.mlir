// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-fold-erfc)" \
// RUN:   --split-input-file | FileCheck %s

// The frontend's erfc, 1 - erf(x), on a vector: one math.erfc, no subtraction.
// CHECK-LABEL: func.func @folds_vector_one_minus_erf(
// CHECK-SAME:      %[[X:[^:]+]]: vector<16xf32>)
// CHECK-NOT:     math.erf %
// CHECK-NOT:     arith.subf
// CHECK:         %[[R:.+]] = math.erfc %[[X]] : vector<16xf32>
// CHECK:         return %[[R]]
func.func @folds_vector_one_minus_erf(%x: vector<16xf32>) -> vector<16xf32> {
  %one = arith.constant dense<1.0> : vector<16xf32>
  %e = math.erf %x : vector<16xf32>
  %r = arith.subf %one, %e : vector<16xf32>
  return %r : vector<16xf32>
}

// -----

// A scalar f64 one too (convert-math-to-libm then calls erfc).
// CHECK-LABEL: func.func @folds_scalar_f64(
// CHECK-SAME:      %[[X:[^:]+]]: f64)
// CHECK:         %[[R:.+]] = math.erfc %[[X]] : f64
// CHECK-NOT:     arith.subf
// CHECK:         return %[[R]]
func.func @folds_scalar_f64(%x: f64) -> f64 {
  %one = arith.constant 1.0 : f64
  %e = math.erf %x : f64
  %r = arith.subf %one, %e : f64
  return %r : f64
}

// -----

// erf read elsewhere too: kept for that read, the subtraction folded.
// CHECK-LABEL: func.func @keeps_erf_for_its_other_uses(
// CHECK-SAME:      %[[X:[^:]+]]: f32)
// CHECK-DAG:     %[[E:.+]] = math.erf %[[X]] : f32
// CHECK-DAG:     %[[C:.+]] = math.erfc %[[X]] : f32
// CHECK-NOT:     arith.subf
// CHECK:         return %[[C]], %[[E]]
func.func @keeps_erf_for_its_other_uses(%x: f32) -> (f32, f32) {
  %one = arith.constant 1.0 : f32
  %e = math.erf %x : f32
  %r = arith.subf %one, %e : f32
  return %r, %e : f32, f32
}

// -----

// Not 1 - erf(x): 2 - erf(x) and erf(x) - 1 stay.
// CHECK-LABEL: func.func @keeps_other_subtractions(
// CHECK-COUNT-2: math.erf %
// CHECK-NOT:     math.erfc
func.func @keeps_other_subtractions(%x: f32, %y: f32) -> (f32, f32) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %e = math.erf %x : f32
  %r = arith.subf %two, %e : f32
  %f = math.erf %y : f32
  %s = arith.subf %f, %one : f32
  return %r, %s : f32, f32
}

// -----

// torch-mlir's form with the erf read twice (by a result and by 1 - erf):
// the consumer reads x and computes erfc; the erf op stays for the result.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @folds_across_generics(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<7x143xf32>)
// CHECK:         %[[E:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<7x143xf32>)
// CHECK:           math.erf
// CHECK:         %[[C:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<7x143xf32>)
// CHECK-NEXT:      ^bb0(%[[IN:[^:]+]]: f32
// CHECK-NOT:       arith.subf
// CHECK:           %[[R:.+]] = math.erfc %[[IN]] : f32
// CHECK-NEXT:      linalg.yield %[[R]]
// CHECK:         return %[[E]], %[[C]]
func.func @folds_across_generics(%x: tensor<7x143xf32>) -> (tensor<7x143xf32>, tensor<7x143xf32>) {
  %init = tensor.empty() : tensor<7x143xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<7x143xf32>) outs(%init : tensor<7x143xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.erf %in : f32
    linalg.yield %v : f32
  } -> tensor<7x143xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<7x143xf32>) outs(%init : tensor<7x143xf32>) {
  ^bb0(%in: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %v = arith.subf %one, %in : f32
    linalg.yield %v : f32
  } -> tensor<7x143xf32>
  return %e, %r : tensor<7x143xf32>, tensor<7x143xf32>
}

// -----

// The erf result read through a broadcast (not an identity map), or read
// twice in the consumer's body: both generics stay as they are.
#row = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @keeps_broadcast_and_shared_reads(
// CHECK-NOT:     math.erfc
func.func @keeps_broadcast_and_shared_reads(%x: tensor<143xf32>, %y: tensor<7x143xf32>)
    -> (tensor<7x143xf32>, tensor<7x143xf32>) {
  %i1 = tensor.empty() : tensor<143xf32>
  %e = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<143xf32>) outs(%i1 : tensor<143xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.erf %in : f32
    linalg.yield %v : f32
  } -> tensor<143xf32>
  %init = tensor.empty() : tensor<7x143xf32>
  %r = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<143xf32>) outs(%init : tensor<7x143xf32>) {
  ^bb0(%in: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %v = arith.subf %one, %in : f32
    linalg.yield %v : f32
  } -> tensor<7x143xf32>
  %f = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<7x143xf32>) outs(%init : tensor<7x143xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.erf %in : f32
    linalg.yield %v : f32
  } -> tensor<7x143xf32>
  %s = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%f : tensor<7x143xf32>) outs(%init : tensor<7x143xf32>) {
  ^bb0(%in: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %v = arith.subf %one, %in : f32
    %w = arith.mulf %v, %in : f32
    linalg.yield %w : f32
  } -> tensor<7x143xf32>
  return %r, %s : tensor<7x143xf32>, tensor<7x143xf32>
}

// -----

// torch-mlir's 1 - t: the 1 is a 0-d i64 tensor read by the generic and
// cast in its body.
#scalar = affine_map<(d0, d1) -> ()>
#same = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @folds_one_read_from_a_tensor(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x37xf32>)
// CHECK:         linalg.generic
// CHECK:         ^bb0(%{{[^:]+}}: i64, %[[IN:[^:]+]]: f32
// CHECK-NOT:       math.erf %
// CHECK-NOT:       arith.subf
// CHECK:           %[[R:.+]] = math.erfc %[[IN]] : f32
// CHECK:           linalg.yield %[[R]]
func.func @folds_one_read_from_a_tensor(%x: tensor<1x37xf32>) -> tensor<1x37xf32> {
  %one = arith.constant dense<1> : tensor<i64>
  %init = tensor.empty() : tensor<1x37xf32>
  %r = linalg.generic {indexing_maps = [#scalar, #same, #same], iterator_types = ["parallel", "parallel"]}
      ins(%one, %x : tensor<i64>, tensor<1x37xf32>) outs(%init : tensor<1x37xf32>) {
  ^bb0(%c: i64, %in: f32, %out: f32):
    %e = math.erf %in : f32
    %f = arith.sitofp %c : i64 to f32
    %v = arith.subf %f, %e : f32
    linalg.yield %v : f32
  } -> tensor<1x37xf32>
  return %r : tensor<1x37xf32>
}
