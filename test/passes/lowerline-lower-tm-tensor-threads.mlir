// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-lower-tm-tensor{vector-bits=512 threads=2})" \
// RUN:   --split-input-file | FileCheck %s

// A cumprod along dimension 0 of 512x4096: each output row is the previous
// one times the input row, in vectors of 16 along the contiguous dimension
// (the first row copied), no scalar column left over; the 4096 columns split
// into two chunks of 2048, one per thread.
// CHECK-LABEL: func.func @outer_scan_is_vectors_split_by_columns(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<512x4096xf32>, %[[INIT:[a-z0-9]+]]: tensor<512x4096xf32>
// CHECK:         %[[F:.+]] = scf.forall (%[[T:.+]]) in (2) shared_outs(%[[S:.+]] = %[[INIT]])
// CHECK:           %[[FIRST:.+]] = arith.muli %[[T]], %[[C2048:.+]] : index
// CHECK:           %[[IN:.+]] = tensor.extract_slice %[[X]][0, %[[FIRST]]] [512, 2048] [1, 1]
// CHECK:           %[[OUT:.+]] = tensor.extract_slice %[[S]][0, %[[FIRST]]] [512, 2048] [1, 1]
// CHECK:           scf.for %[[I:.+]] = {{.+}} iter_args(%[[A:.+]] = %[[OUT]])
// CHECK:             scf.if
// CHECK:               vector.transfer_read %[[IN]]
// CHECK:             } else {
// CHECK:               scf.for %[[C:.+]] = {{.+}} step %[[C16:.+]] iter_args(%[[B:.+]] = %[[A]])
// CHECK:                 %[[ABOVE:.+]] = arith.subi %[[I]]
// CHECK:                 %[[P:.+]] = vector.transfer_read %[[B]][%[[ABOVE]], %[[C]]]
// CHECK:                 %[[V:.+]] = vector.transfer_read %[[IN]][%[[I]], %[[C]]]
// CHECK:                 %[[M:.+]] = arith.mulf %[[P]], %[[V]] : vector<16xf32>
// CHECK:                 vector.transfer_write %[[M]], %[[B]][%[[I]], %[[C]]]
// CHECK:           scf.forall.in_parallel
// CHECK-NEXT:        tensor.parallel_insert_slice %{{.+}} into %[[S]][0, %[[FIRST]]] [512, 2048] [1, 1]
// CHECK:         return %[[F]]
func.func @outer_scan_is_vectors_split_by_columns(%x: tensor<512x4096xf32>, %init: tensor<512x4096xf32>, %acc: tensor<4096xf32>) -> tensor<512x4096xf32> {
  %r:2 = "lowerline.tm_scan"(%x, %init, %acc) {combiner = @combine_mul, dimension = 0 : i64, inclusive = true}
      : (tensor<512x4096xf32>, tensor<512x4096xf32>, tensor<4096xf32>) -> (tensor<512x4096xf32>, tensor<4096xf32>)
  return %r#0 : tensor<512x4096xf32>
}
func.func private @combine_mul(%a: f32, %b: f32) -> f32 {
  %m = arith.mulf %a, %b : f32
  return %m : f32
}

// -----

// A small exclusive cumsum along dimension 0 (7x21 i32): vectors of 16 for
// the first 16 columns, then one column at a time; element 0 of each column
// is the accumulator's. Too little work for a second thread: no scf.forall.
// CHECK-LABEL: func.func @small_outer_scan_stays_on_one_thread(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<7x21xi32>, %[[INIT:[a-z0-9]+]]: tensor<7x21xi32>, %[[ACC:[a-z0-9]+]]: tensor<21xi32>
// CHECK-NOT:     scf.forall
// CHECK:         scf.if
// CHECK:           vector.transfer_read %[[ACC]]{{.+}} : tensor<21xi32>, vector<16xi32>
// CHECK:           tensor.extract %[[ACC]]
// CHECK:         } else {
// CHECK:           arith.addi %{{.+}}, %{{.+}} : vector<16xi32>
// CHECK:           arith.addi %{{.+}}, %{{.+}} : i32
// CHECK-NOT:     scf.forall
// CHECK:         return
func.func @small_outer_scan_stays_on_one_thread(%x: tensor<7x21xi32>, %init: tensor<7x21xi32>, %acc: tensor<21xi32>) -> tensor<7x21xi32> {
  %r:2 = "lowerline.tm_scan"(%x, %init, %acc) {combiner = @combine_addi, dimension = 0 : i64, inclusive = false}
      : (tensor<7x21xi32>, tensor<7x21xi32>, tensor<21xi32>) -> (tensor<7x21xi32>, tensor<21xi32>)
  return %r#0 : tensor<7x21xi32>
}
func.func private @combine_addi(%a: i32, %b: i32) -> i32 {
  %s = arith.addi %a, %b : i32
  return %s : i32
}

// -----

// A cumsum along the contiguous dimension stays scalar per row (running
// values in registers, four rows at once), no vectors; its 1000 rows split into two chunks of
// 500; the final value (used) is a second shared output, the accumulator
// sliced by the same rows.
// CHECK-LABEL: func.func @inner_scan_is_rows_split_among_threads(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<1000x77xf32>, %[[INIT:[a-z0-9]+]]: tensor<1000x77xf32>, %[[ACC:[a-z0-9]+]]: tensor<1000xf32>
// CHECK-NOT:     vector.transfer_read
// CHECK:         %[[F:.+]]:2 = scf.forall (%{{.+}}) in (2) shared_outs(%[[S:.+]] = %[[INIT]], %[[SA:.+]] = %[[ACC]])
// CHECK:           tensor.extract_slice %[[X]][%[[FIRST:.+]], 0] [500, 77] [1, 1]
// CHECK:           tensor.extract_slice %[[SA]][%[[FIRST]]] [500] [1]
// CHECK:           scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}, %[[SUM:.+]] = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<500x77xf32>, f32, f32, f32, f32)
// CHECK:             arith.addf %[[SUM]], %{{.+}} : f32
// CHECK:           scf.forall.in_parallel
// CHECK-NEXT:        tensor.parallel_insert_slice %{{.+}} into %[[S]][%[[FIRST]], 0] [500, 77] [1, 1]
// CHECK-NEXT:        tensor.parallel_insert_slice %{{.+}} into %[[SA]][%[[FIRST]]] [500] [1]
// CHECK-NOT:     vector.transfer_read
// CHECK:         return %[[F]]#0, %[[F]]#1
func.func @inner_scan_is_rows_split_among_threads(%x: tensor<1000x77xf32>, %init: tensor<1000x77xf32>, %acc: tensor<1000xf32>) -> (tensor<1000x77xf32>, tensor<1000xf32>) {
  %r:2 = "lowerline.tm_scan"(%x, %init, %acc) {combiner = @combine_addf, dimension = 1 : i64, inclusive = true}
      : (tensor<1000x77xf32>, tensor<1000x77xf32>, tensor<1000xf32>) -> (tensor<1000x77xf32>, tensor<1000xf32>)
  return %r#0, %r#1 : tensor<1000x77xf32>, tensor<1000xf32>
}
func.func private @combine_addf(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// A scan of booleans along dimension 0 cannot use vectors of i1: the
// general form, a select per element.
// CHECK-LABEL: func.func @bool_outer_scan_stays_scalar(
// CHECK-NOT:     vector.transfer_read
// CHECK:         arith.select %{{.+}}, %{{.+}}, %{{.+}} : i1
// CHECK:         return
func.func @bool_outer_scan_stays_scalar(%x: tensor<9x5xi1>, %init: tensor<9x5xi1>, %acc: tensor<5xi1>) -> tensor<9x5xi1> {
  %r:2 = "lowerline.tm_scan"(%x, %init, %acc) {combiner = @combine_or, dimension = 0 : i64, inclusive = true}
      : (tensor<9x5xi1>, tensor<9x5xi1>, tensor<5xi1>) -> (tensor<9x5xi1>, tensor<5xi1>)
  return %r#0 : tensor<9x5xi1>
}
func.func private @combine_or(%a: i1, %b: i1) -> i1 {
  %s = arith.ori %a, %b : i1
  return %s : i1
}

// -----

// A sort of 1000 keys along dimension 0 with their indices: transposed so
// that each merge reads and writes contiguous runs; the 7 rows then split
// into chunks of 4 (the last of 3, a dynamic size), each thread merge
// sorting its rows into new tensors, inserted into the shared results,
// which are transposed back.
// CHECK-LABEL: func.func @sort_splits_other_dimension(
// CHECK-SAME:      %[[K:[a-z0-9]+]]: tensor<1000x7xf32>, %[[V:[a-z0-9]+]]: tensor<1000x7xi64>
// CHECK:         %[[TK:.+]] = linalg.transpose ins(%[[K]] : tensor<1000x7xf32>) outs(%{{.+}} : tensor<7x1000xf32>) permutation = [1, 0]
// CHECK:         %[[TV:.+]] = linalg.transpose ins(%[[V]] : tensor<1000x7xi64>) outs(%{{.+}} : tensor<7x1000xi64>) permutation = [1, 0]
// CHECK:         %[[EK:.+]] = tensor.empty() : tensor<7x1000xf32>
// CHECK:         %[[EV:.+]] = tensor.empty() : tensor<7x1000xi64>
// CHECK:         %[[F:.+]]:2 = scf.forall (%{{.+}}) in (2) shared_outs(%[[SK:.+]] = %[[EK]], %[[SV:.+]] = %[[EV]])
// CHECK:           %[[SIZE:.+]] = arith.minui
// CHECK:           tensor.extract_slice %[[TK]][%[[FIRST:.+]], 0] [%[[SIZE]], 1000] [1, 1] : tensor<7x1000xf32> to tensor<?x1000xf32>
// CHECK:           arith.cmpf olt
// CHECK:           scf.forall.in_parallel
// CHECK-NEXT:        tensor.parallel_insert_slice %{{.+}} into %[[SK]][%[[FIRST]], 0] [%[[SIZE]], 1000] [1, 1]
// CHECK-NEXT:        tensor.parallel_insert_slice %{{.+}} into %[[SV]][%[[FIRST]], 0] [%[[SIZE]], 1000] [1, 1]
// CHECK:         %[[RK:.+]] = linalg.transpose ins(%[[F]]#0 : tensor<7x1000xf32>) outs(%{{.+}} : tensor<1000x7xf32>) permutation = [1, 0]
// CHECK:         %[[RV:.+]] = linalg.transpose ins(%[[F]]#1 : tensor<7x1000xi64>) outs(%{{.+}} : tensor<1000x7xi64>) permutation = [1, 0]
// CHECK:         return %[[RK]], %[[RV]]
func.func @sort_splits_other_dimension(%k: tensor<1000x7xf32>, %v: tensor<1000x7xi64>) -> (tensor<1000x7xf32>, tensor<1000x7xi64>) {
  %r:2 = "lowerline.tm_sort"(%k, %v) {combiner = @ascending, dimension = 0 : i64}
      : (tensor<1000x7xf32>, tensor<1000x7xi64>) -> (tensor<1000x7xf32>, tensor<1000x7xi64>)
  return %r#0, %r#1 : tensor<1000x7xf32>, tensor<1000x7xi64>
}
func.func private @ascending(%a: f32, %b: f32, %ia: i64, %ib: i64) -> i1 {
  %c = arith.cmpf ole, %a, %b : f32
  return %c : i1
}

// -----

// A sort of 5 rows of 129: too little work for a second thread.
// CHECK-LABEL: func.func @small_sort_stays_on_one_thread(
// CHECK-NOT:     scf.forall
// CHECK:         return
func.func @small_sort_stays_on_one_thread(%k: tensor<5x129xi32>) -> tensor<5x129xi32> {
  %r = "lowerline.tm_sort"(%k) {combiner = @descending, dimension = 1 : i64}
      : (tensor<5x129xi32>) -> tensor<5x129xi32>
  return %r : tensor<5x129xi32>
}
func.func private @descending(%a: i32, %b: i32) -> i1 {
  %c = arith.cmpi sge, %a, %b : i32
  return %c : i1
}
