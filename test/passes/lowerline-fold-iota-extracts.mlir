// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fold-iota-extracts),canonicalize)" \
// RUN:   --split-input-file | FileCheck %s

// An index check (frontend/gathers.py): arange(37) read at each checked id.
// The read is the id itself, kept within the table (unsigned min with 36)
// after the asserts; the iota, now unread, is gone.
// CHECK-LABEL: func.func @checked_index_reads_no_table(
// CHECK-DAG:     %[[LAST:.+]] = arith.constant 36 : index
// CHECK-NOT:     linalg.index
// CHECK:         ^bb0(%[[IN:.+]]: i64, %{{.+}}: i64):
// CHECK-NEXT:      %[[I:.+]] = arith.index_cast %[[IN]] : i64 to index
// CHECK:           cf.assert
// CHECK-NEXT:      %[[MIN:.+]] = arith.minui %[[I]], %[[LAST]] : index
// CHECK-NEXT:      %[[BACK:.+]] = arith.index_cast %[[MIN]] : index to i64
// CHECK-NEXT:      linalg.yield %[[BACK]] : i64
// CHECK-NOT:     tensor.extract
#map = affine_map<(d0) -> (d0)>
func.func @checked_index_reads_no_table(%ids: tensor<11xi64>) -> tensor<11xi64> {
  %c37 = arith.constant 37 : index
  %e = tensor.empty() : tensor<37xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e : tensor<37xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<37xi64>
  %o = tensor.empty() : tensor<11xi64>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%ids : tensor<11xi64>) outs(%o : tensor<11xi64>) {
  ^bb0(%in: i64, %out: i64):
    %i = arith.index_cast %in : i64 to index
    %ok = arith.cmpi slt, %i, %c37 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = tensor.extract %iota[%i] : tensor<37xi64>
    linalg.yield %v : i64
  } -> tensor<11xi64>
  return %r : tensor<11xi64>
}

// -----

// A 2-D iota along dim 1, i32, of dynamic rows: the read is the second
// index; the iota's other extent does not matter.
// CHECK-LABEL: func.func @iota_along_a_dim(
// CHECK-SAME:      %{{.+}}: index, %[[J:.+]]: index, %{{.+}}: index)
// CHECK-NEXT:    %[[LAST:.+]] = arith.constant 4 : index
// CHECK-NEXT:    %[[MIN:.+]] = arith.minui %[[J]], %[[LAST]] : index
// CHECK-NEXT:    %[[V:.+]] = arith.index_cast %[[MIN]] : index to i32
// CHECK-NEXT:    return %[[V]] : i32
#map2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @iota_along_a_dim(%i: index, %j: index, %rows: index) -> i32 {
  %e = tensor.empty(%rows) : tensor<?x5xi32>
  %iota = linalg.generic {indexing_maps = [#map2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x5xi32>) {
  ^bb0(%out: i32):
    %k = linalg.index 1 : index
    %c = arith.index_cast %k : index to i32
    linalg.yield %c : i32
  } -> tensor<?x5xi32>
  %v = tensor.extract %iota[%i, %j] : tensor<?x5xi32>
  return %v : i32
}

// -----

// Not an iota: arange(2, 39) (a start in the body), a float arange, and an
// iota whose result goes through a transposing map all keep their tables.
// CHECK-LABEL: func.func @not_plain_iotas(
// CHECK-COUNT-3: tensor.extract
#map = affine_map<(d0) -> (d0)>
#transposed = affine_map<(d0, d1) -> (d1, d0)>
func.func @not_plain_iotas(%i: index) -> (i64, f32, i64) {
  %c2 = arith.constant 2 : i64
  %e = tensor.empty() : tensor<37xi64>
  %shifted = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e : tensor<37xi64>) {
  ^bb0(%out: i64):
    %k = linalg.index 0 : index
    %c = arith.index_cast %k : index to i64
    %s = arith.addi %c, %c2 : i64
    linalg.yield %s : i64
  } -> tensor<37xi64>
  %a = tensor.extract %shifted[%i] : tensor<37xi64>
  %ef = tensor.empty() : tensor<37xf32>
  %floats = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%ef : tensor<37xf32>) {
  ^bb0(%out: f32):
    %k = linalg.index 0 : index
    %c = arith.index_cast %k : index to i64
    %f = arith.sitofp %c : i64 to f32
    linalg.yield %f : f32
  } -> tensor<37xf32>
  %b = tensor.extract %floats[%i] : tensor<37xf32>
  %e2 = tensor.empty() : tensor<4x4xi64>
  %t = linalg.generic {indexing_maps = [#transposed], iterator_types = ["parallel", "parallel"]} outs(%e2 : tensor<4x4xi64>) {
  ^bb0(%out: i64):
    %k = linalg.index 0 : index
    %c = arith.index_cast %k : index to i64
    linalg.yield %c : i64
  } -> tensor<4x4xi64>
  %d = tensor.extract %t[%i, %i] : tensor<4x4xi64>
  return %a, %b, %d : i64, f32, i64
}

// -----

// A dynamic iota (arange(n)): the bound is its extent less one.
// CHECK-LABEL: func.func @dynamic_iota(
// CHECK-SAME:      %[[I:.+]]: index, %[[N:.+]]: index)
// CHECK:         %[[LAST:.+]] = arith.subi %[[N]], %{{.+}} : index
// CHECK-NEXT:    %[[MIN:.+]] = arith.minui %[[I]], %[[LAST]] : index
// CHECK-NEXT:    arith.index_cast %[[MIN]] : index to i64
// CHECK-NOT:     linalg.generic
#map = affine_map<(d0) -> (d0)>
func.func @dynamic_iota(%i: index, %n: index) -> i64 {
  %e = tensor.empty(%n) : tensor<?xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e : tensor<?xi64>) {
  ^bb0(%out: i64):
    %k = linalg.index 0 : index
    %c = arith.index_cast %k : index to i64
    linalg.yield %c : i64
  } -> tensor<?xi64>
  %v = tensor.extract %iota[%i] : tensor<?xi64>
  return %v : i64
}

// -----

// arange(1): canonicalize has made the index of the unit dim a constant;
// the read is that constant.
// CHECK-LABEL: func.func @one_element_iota(
// CHECK-NEXT:    %[[Z:.+]] = arith.constant 0 : i64
// CHECK-NEXT:    return %[[Z]] : i64
#map = affine_map<(d0) -> (d0)>
func.func @one_element_iota(%i: index) -> i64 {
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<1xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e : tensor<1xi64>) {
  ^bb0(%out: i64):
    linalg.yield %c0 : i64
  } -> tensor<1xi64>
  %v = tensor.extract %iota[%i] : tensor<1xi64>
  return %v : i64
}
