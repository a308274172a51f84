// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fold-all-inf-checks))" \
// RUN:   --split-input-file | FileCheck %s

#m3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#m4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#m5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#m6 = affine_map<(d0, d1, d2, d3) -> ()>

// _safe_softmax over a dynamic row: the all--inf check (and of x == -inf,
// widened to f64) is gone; its reader reads the row max through the same
// row and compares it with -inf in its body.
// CHECK-DAG:   #[[ROW:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @safe_softmax(
// CHECK:         %[[MAX:.+]] = linalg.generic {{.+}} {
// CHECK:           arith.maximumf
// CHECK-NOT:     arith.andi
// CHECK:         linalg.generic {indexing_maps = [#[[ROW]], {{.+}}]{{.+}} ins(%[[MAX]], {{.+}} : tensor<2x4x?xf32>,
// CHECK-NEXT:    ^bb0(%[[M:[a-z0-9_]+]]: f32,
// CHECK-NEXT:      %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:      %[[ALL:.+]] = arith.cmpf oeq, %[[M]], %[[NINF]] : f32
// CHECK:           arith.select %[[ALL]],
func.func @safe_softmax(%x: tensor<2x4x?x?xf32>, %s: index) -> tensor<2x4x?x?xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %ninf64 = arith.constant 0xFFF0000000000000 : f64
  %true = arith.constant true
  %z = arith.constant 0.0 : f32
  %zt = arith.constant dense<0.0> : tensor<f32>
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
  %e4 = tensor.empty(%s) : tensor<2x4x?x1xi1>
  %f4 = linalg.fill ins(%true : i1) outs(%e4 : tensor<2x4x?x1xi1>) -> tensor<2x4x?x1xi1>
  %all = linalg.generic {indexing_maps = [#m3, #m5], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x4x?x?xf32>) outs(%f4 : tensor<2x4x?x1xi1>) {
  ^bb0(%in: f32, %out: i1):
    %w = arith.extf %in : f32 to f64
    %c = arith.cmpf oeq, %w, %ninf64 : f64
    %a = arith.andi %c, %out : i1
    linalg.yield %a : i1
  } -> tensor<2x4x?x1xi1>
  %y = linalg.generic {indexing_maps = [#m5, #m6, #m3, #m5, #m3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all, %zt, %exp, %sum : tensor<2x4x?x1xi1>, tensor<f32>, tensor<2x4x?x?xf32>, tensor<2x4x?x1xf32>) outs(%e2 : tensor<2x4x?x?xf32>) {
  ^bb0(%in: i1, %zero: f32, %ex: f32, %sm: f32, %out: f32):
    %q = arith.divf %ex, %sm : f32
    %r = arith.select %in, %zero, %q : f32
    linalg.yield %r : f32
  } -> tensor<2x4x?x?xf32>
  return %y : tensor<2x4x?x?xf32>
}

// -----

#r2 = affine_map<(d0, d1) -> (d0, d1)>
#r1 = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0) -> (d0)>

// A NaN-ignoring max (maxnumf) is -inf for a row of -inf and NaN, where the
// check is false: kept.
// CHECK-LABEL: func.func @keeps_check_beside_maxnumf(
// CHECK:         arith.andi
func.func @keeps_check_beside_maxnumf(%x: tensor<4x?xf32>) -> (tensor<4xf32>, tensor<4xi1>) {
  %ninf = arith.constant 0xFF800000 : f32
  %true = arith.constant true
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#r2, #r1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x?xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maxnumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %eb = tensor.empty() : tensor<4xi1>
  %fb = linalg.fill ins(%true : i1) outs(%eb : tensor<4xi1>) -> tensor<4xi1>
  %all = linalg.generic {indexing_maps = [#r2, #r1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x?xf32>) outs(%fb : tensor<4xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf oeq, %in, %ninf : f32
    %a = arith.andi %c, %out : i1
    linalg.yield %a : i1
  } -> tensor<4xi1>
  %eo = tensor.empty() : tensor<4xi1>
  %not = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%all : tensor<4xi1>) outs(%eo : tensor<4xi1>) {
  ^bb0(%in: i1, %out: i1):
    %t = arith.constant true
    %n = arith.xori %in, %t : i1
    linalg.yield %n : i1
  } -> tensor<4xi1>
  return %max, %not : tensor<4xf32>, tensor<4xi1>
}

// -----

#r2 = affine_map<(d0, d1) -> (d0, d1)>
#r1 = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0) -> (d0)>

// A max that starts from the lowest finite float, not -inf, is never -inf:
// kept. So is a check whose result is returned (no generic reads it).
// CHECK-LABEL: func.func @keeps_check_beside_finite_init(
// CHECK:         arith.andi
// CHECK-LABEL: func.func @keeps_returned_check(
// CHECK:         arith.andi
func.func @keeps_check_beside_finite_init(%x: tensor<4x?xf32>) -> (tensor<4xf32>, tensor<4xi1>) {
  %lowest = arith.constant -3.40282347E+38 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %true = arith.constant true
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%lowest : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#r2, #r1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x?xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %eb = tensor.empty() : tensor<4xi1>
  %fb = linalg.fill ins(%true : i1) outs(%eb : tensor<4xi1>) -> tensor<4xi1>
  %all = linalg.generic {indexing_maps = [#r2, #r1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x?xf32>) outs(%fb : tensor<4xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf oeq, %in, %ninf : f32
    %a = arith.andi %c, %out : i1
    linalg.yield %a : i1
  } -> tensor<4xi1>
  %eo = tensor.empty() : tensor<4xi1>
  %not = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%all : tensor<4xi1>) outs(%eo : tensor<4xi1>) {
  ^bb0(%in: i1, %out: i1):
    %t = arith.constant true
    %n = arith.xori %in, %t : i1
    linalg.yield %n : i1
  } -> tensor<4xi1>
  return %max, %not : tensor<4xf32>, tensor<4xi1>
}
func.func @keeps_returned_check(%x: tensor<4x?xf32>) -> (tensor<4xf32>, tensor<4xi1>) {
  %ninf = arith.constant 0xFF800000 : f32
  %true = arith.constant true
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#r2, #r1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x?xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %eb = tensor.empty() : tensor<4xi1>
  %fb = linalg.fill ins(%true : i1) outs(%eb : tensor<4xi1>) -> tensor<4xi1>
  %all = linalg.generic {indexing_maps = [#r2, #r1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x?xf32>) outs(%fb : tensor<4xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf oeq, %in, %ninf : f32
    %a = arith.andi %c, %out : i1
    linalg.yield %a : i1
  } -> tensor<4xi1>
  return %max, %all : tensor<4xf32>, tensor<4xi1>
}
