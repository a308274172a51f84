// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-lower-tm-tensor)" \
// RUN:   --split-input-file | FileCheck %s

// cumprod along the last dimension of 5x7: rows 0-3 in one loop, then row 4.
// Element 0 of each row is the input's, stored before a loop over the rest
// that carries each row's running product in a register (the combiner
// inlined, four independent chains), not read back from the output.
// The unused final value is the accumulator init; the combiner is erased.
// CHECK-LABEL: func.func @scan_becomes_loops(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<5x7xf32>, %[[INIT:[a-z0-9]+]]: tensor<5x7xf32>
// CHECK:         %[[FOUR:.+]] = scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[A:.+]] = %[[INIT]])
// CHECK:           %[[I1:.+]] = arith.addi %[[I]]
// CHECK:           %[[X0:.+]] = tensor.extract %[[X]][%[[I]], %[[C0:.+]]]
// CHECK:           %[[X1:.+]] = tensor.extract %[[X]][%[[I1]], %[[C0]]]
// CHECK:           %[[OUT0:.+]] = tensor.insert %[[X0]] into %[[A]][%[[I]], %[[C0]]]
// CHECK:           scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[B:.+]] = %{{.+}}, %[[P0:.+]] = %[[X0]], %[[P1:.+]] = %[[X1]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<5x7xf32>, f32, f32, f32, f32)
// CHECK-NEXT:        %[[IN:.+]] = tensor.extract %[[X]][%[[I]], %[[J]]]
// CHECK-NEXT:        %[[M:.+]] = arith.mulf %[[P0]], %[[IN]] : f32
// CHECK-NEXT:        %[[V:.+]] = tensor.insert %[[M]] into %[[B]][%[[I]], %[[J]]]
// CHECK-NEXT:        %[[IN1:.+]] = tensor.extract %[[X]][%[[I1]], %[[J]]]
// CHECK-NEXT:        %[[M1:.+]] = arith.mulf %[[P1]], %[[IN1]] : f32
// CHECK:             scf.yield %{{.+}}, %[[M]], %[[M1]], %{{.+}}, %{{.+}} :
// CHECK:         %[[R:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[FOUR]])
// CHECK:           scf.for {{.+}} -> (tensor<5x7xf32>, f32)
// CHECK:         return %[[R]]
// CHECK-NOT:     lowerline.tm_scan
// CHECK-NOT:     func.func private @combine_mul
func.func @scan_becomes_loops(%x: tensor<5x7xf32>, %init: tensor<5x7xf32>, %acc: tensor<5xf32>) -> tensor<5x7xf32> {
  %r:2 = "lowerline.tm_scan"(%x, %init, %acc) {combiner = @combine_mul, dimension = 1 : i64, inclusive = true}
      : (tensor<5x7xf32>, tensor<5x7xf32>, tensor<5xf32>) -> (tensor<5x7xf32>, tensor<5xf32>)
  return %r#0 : tensor<5x7xf32>
}
func.func private @combine_mul(%a: f32, %b: f32) -> f32 {
  %m = arith.mulf %a, %b : f32
  return %m : f32
}

// -----

// An exclusive scan whose final value is used: element 0 is the accumulator's
// init, element i combines output[i-1] and input[i-1]; a second loop nest
// stores the last output into the accumulator (TMTensor's final value).
// CHECK-LABEL: func.func @exclusive_scan_with_final(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<4x3xi32>, %[[INIT:[a-z0-9]+]]: tensor<4x3xi32>, %[[ACC:[a-z0-9]+]]: tensor<3xi32>)
// CHECK:         %[[OUT:.+]] = scf.for
// CHECK:             %[[START:.+]] = tensor.extract %[[ACC]]
// CHECK:             arith.select %{{.+}}, %[[START]], %{{.+}} : i32
// CHECK:         %[[LAST:.+]] = arith.subi
// CHECK:         %[[FINAL:.+]] = scf.for %[[J:.+]] = {{.+}} iter_args(%[[A:.+]] = %[[ACC]])
// CHECK:           %[[O:.+]] = tensor.extract %[[OUT]][%[[LAST]], %[[J]]]
// CHECK-NEXT:      tensor.insert %[[O]] into %[[A]][%[[J]]]
// CHECK:         return %[[OUT]], %[[FINAL]]
func.func @exclusive_scan_with_final(%x: tensor<4x3xi32>, %init: tensor<4x3xi32>, %acc: tensor<3xi32>) -> (tensor<4x3xi32>, tensor<3xi32>) {
  %r:2 = "lowerline.tm_scan"(%x, %init, %acc) {combiner = @combine_addi, dimension = 0 : i64, inclusive = false}
      : (tensor<4x3xi32>, tensor<4x3xi32>, tensor<3xi32>) -> (tensor<4x3xi32>, tensor<3xi32>)
  return %r#0, %r#1 : tensor<4x3xi32>, tensor<3xi32>
}
func.func private @combine_addi(%a: i32, %b: i32) -> i32 {
  %s = arith.addi %a, %b : i32
  return %s : i32
}

// -----

// scatter_add: one loop per update dimension carrying the original; the index
// column sets dimension 0 (a negative index counts from the end, as in
// index_put), the update's own coordinate dimension 1; updates outside the
// tensor are dropped.
// CHECK-LABEL: func.func @scatter_becomes_loops(
// CHECK-SAME:      %[[U:[a-z0-9]+]]: tensor<9x4xf32>, %[[IDX:[a-z0-9]+]]: tensor<9x1xi64>, %[[O:[a-z0-9]+]]: tensor<6x4xf32>)
// CHECK:         scf.for %[[N:.+]] = {{.+}} iter_args(%[[A:.+]] = %[[O]])
// CHECK:           scf.for %[[K:.+]] = {{.+}} iter_args(%[[B:.+]] = %[[A]])
// CHECK:             %[[ROW:.+]] = tensor.extract %[[IDX]][%[[N]], %{{.+}}] : tensor<9x1xi64>
// CHECK:             %[[C:.+]] = arith.index_cast %[[ROW]] : i64 to index
// CHECK:             %[[NEG:.+]] = arith.cmpi slt, %[[C]]
// CHECK:             %[[END:.+]] = arith.addi %[[C]]
// CHECK:             %[[R:.+]] = arith.select %[[NEG]], %[[END]], %[[C]]
// CHECK:             %[[UPD:.+]] = tensor.extract %[[U]][%[[N]], %[[K]]]
// CHECK:             arith.cmpi ult, %[[R]]
// CHECK:             arith.cmpi ult, %[[K]]
// CHECK:             %[[OK:.+]] = arith.andi
// CHECK-NEXT:        scf.if %[[OK]]
// CHECK:               %[[OLD:.+]] = tensor.extract %[[B]][%[[R]], %[[K]]]
// CHECK:               %[[SUM:.+]] = arith.addf %[[UPD]], %[[OLD]]
// CHECK:               tensor.insert %[[SUM]] into %[[B]][%[[R]], %[[K]]]
// CHECK:             } else {
// CHECK:               scf.yield %[[B]]
// CHECK-NOT:     lowerline.tm_scatter
func.func @scatter_becomes_loops(%u: tensor<9x4xf32>, %i: tensor<9x1xi64>, %o: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %r = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @combine_add, dimension_map = array<i64: 0>, unique_indices = false}
      : (tensor<9x4xf32>, tensor<9x1xi64>, tensor<6x4xf32>) -> tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}
func.func private @combine_add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// A sort of 5 keys with their indices: 3 merge passes (runs of 1, 2, 4), each
// into a new tensor; the right element goes first only when strictly before
// the left one (stable), NaN counting as the greatest.
// CHECK-LABEL: func.func @sort_becomes_merge_passes(
// CHECK:         tensor.empty() : tensor<3x5xf32>
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               %[[NAN:.+]] = arith.andi
// CHECK:               %[[LT:.+]] = arith.cmpf olt
// CHECK:               arith.ori %[[LT]], %[[NAN]]
// CHECK:         tensor.empty() : tensor<3x5xf32>
// CHECK:         tensor.empty() : tensor<3x5xf32>
// CHECK-NOT:     tensor.empty() : tensor<3x5xf32>
// CHECK:         return
func.func @sort_becomes_merge_passes(%k: tensor<3x5xf32>, %v: tensor<3x5xi64>) -> (tensor<3x5xf32>, tensor<3x5xi64>) {
  %r:2 = "lowerline.tm_sort"(%k, %v) {combiner = @ascending, dimension = 1 : i64}
      : (tensor<3x5xf32>, tensor<3x5xi64>) -> (tensor<3x5xf32>, tensor<3x5xi64>)
  return %r#0, %r#1 : tensor<3x5xf32>, tensor<3x5xi64>
}
func.func private @ascending(%a: f32, %b: f32, %ia: i64, %ib: i64) -> i1 {
  %c = arith.cmpf ole, %a, %b : f32
  return %c : i1
}

// -----

// A single key tensor along dimension 0 of length 1 is already sorted.
// CHECK-LABEL: func.func @sort_of_one_is_identity(
// CHECK-SAME:      %[[K:[a-z0-9]+]]: tensor<1x4xi32>)
// CHECK-NEXT:    return %[[K]]
func.func @sort_of_one_is_identity(%k: tensor<1x4xi32>) -> tensor<1x4xi32> {
  %r = "lowerline.tm_sort"(%k) {combiner = @descending, dimension = 0 : i64}
      : (tensor<1x4xi32>) -> tensor<1x4xi32>
  return %r : tensor<1x4xi32>
}
func.func private @descending(%a: i32, %b: i32) -> i1 {
  %c = arith.cmpi sge, %a, %b : i32
  return %c : i1
}

// -----

// Nothing to lower: other ops and functions stay as they are.
// CHECK-LABEL: func.func @leaves_other_ops(
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    linalg.fill
// CHECK-NEXT:    return
// CHECK:       func.func private @not_a_combiner
func.func @leaves_other_ops(%o: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %r = linalg.fill ins(%zero : f32) outs(%o : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func private @not_a_combiner(%a: f32) -> f32 {
  return %a : f32
}

// -----

// topk (k=5 of 301): the sort is read only for its first 5 along its
// dimension, so each row is a selection into 5-wide results: an element
// enters when the 5 kept are not all filled or it goes before the last of
// them; the kept ones it goes strictly before shift up one (stable). The
// slices read the selection; no merge pass over the whole rows.
// CHECK-LABEL: func.func @topk_is_a_selection(
// CHECK-SAME:      %[[K:[a-z0-9]+]]: tensor<6x301xf32>, %[[V:[a-z0-9]+]]: tensor<6x301xi64>
// CHECK-DAG:     %[[EK:.+]] = tensor.empty() : tensor<6x5xf32>
// CHECK-DAG:     %[[EV:.+]] = tensor.empty() : tensor<6x5xi64>
// CHECK:         %[[R:.+]]:2 = scf.for %[[I:.+]] = {{.+}} iter_args(%{{.+}} = %[[EK]], %{{.+}} = %[[EV]])
// CHECK:           scf.for %[[J:.+]] = {{.+}} iter_args(%[[A:.+]] = %{{.+}}, %{{.+}} = %{{.+}}, %[[FILLED:.+]] = %{{.+}}) -> (tensor<6x5xf32>, tensor<6x5xi64>, index)
// CHECK:             %[[X:.+]] = tensor.extract %[[K]][%[[I]], %[[J]]]
// CHECK:             %[[LAST:.+]] = tensor.extract %[[A]][%[[I]], %{{.+}}] : tensor<6x5xf32>
// CHECK:             %[[FULL:.+]] = arith.cmpi eq, %[[FILLED]]
// CHECK:             arith.cmpf ogt, %[[X]], %[[LAST]]
// CHECK:             scf.if
// CHECK:               scf.for
// CHECK:                 tensor.insert {{.+}} : tensor<6x5xf32>
// CHECK:                 tensor.insert {{.+}} : tensor<6x5xi64>
// CHECK-NOT:     tensor.extract_slice
// CHECK-NOT:     tensor<6x301xf32> to
// CHECK:         return %[[R]]#0, %[[R]]#1
func.func @topk_is_a_selection(%k: tensor<6x301xf32>, %v: tensor<6x301xi64>) -> (tensor<6x5xf32>, tensor<6x5xi64>) {
  %r:2 = "lowerline.tm_sort"(%k, %v) {combiner = @descending_f32, dimension = 1 : i64}
      : (tensor<6x301xf32>, tensor<6x301xi64>) -> (tensor<6x301xf32>, tensor<6x301xi64>)
  %a = tensor.extract_slice %r#0[0, 0] [6, 5] [1, 1] : tensor<6x301xf32> to tensor<6x5xf32>
  %b = tensor.extract_slice %r#1[0, 0] [6, 5] [1, 1] : tensor<6x301xi64> to tensor<6x5xi64>
  return %a, %b : tensor<6x5xf32>, tensor<6x5xi64>
}
func.func private @descending_f32(%a: f32, %b: f32, %ia: i64, %ib: i64) -> i1 {
  %c = arith.cmpf oge, %a, %b : f32
  return %c : i1
}

// -----

// The first 100 of 301 are too many for a selection (shifting up to 100 kept
// ones per entry): the merge sort, then the slice.
// CHECK-LABEL: func.func @large_k_is_sorted(
// CHECK:         tensor.empty() : tensor<6x301xf32>
// CHECK:         tensor.extract_slice %{{.+}}[0, 0] [6, 100] [1, 1]
func.func @large_k_is_sorted(%k: tensor<6x301xf32>) -> tensor<6x100xf32> {
  %r = "lowerline.tm_sort"(%k) {combiner = @descending_keys, dimension = 1 : i64}
      : (tensor<6x301xf32>) -> tensor<6x301xf32>
  %a = tensor.extract_slice %r[0, 0] [6, 100] [1, 1] : tensor<6x301xf32> to tensor<6x100xf32>
  return %a : tensor<6x100xf32>
}
func.func private @descending_keys(%a: f32, %b: f32) -> i1 {
  %c = arith.cmpf oge, %a, %b : f32
  return %c : i1
}

// -----

// The whole sort is read too (or rows from another offset): the merge sort.
// CHECK-LABEL: func.func @sort_read_whole_is_sorted(
// CHECK:         tensor.empty() : tensor<6x301xf32>
// CHECK:         scf.for
// CHECK:         tensor.extract_slice %{{.+}}[0, 0] [6, 5] [1, 1]
// CHECK:         tensor.extract_slice %{{.+}}[0, 3] [6, 5] [1, 1]
func.func @sort_read_whole_is_sorted(%k: tensor<6x301xf32>) -> (tensor<6x5xf32>, tensor<6x5xf32>) {
  %r = "lowerline.tm_sort"(%k) {combiner = @ascending_keys, dimension = 1 : i64}
      : (tensor<6x301xf32>) -> tensor<6x301xf32>
  %a = tensor.extract_slice %r[0, 0] [6, 5] [1, 1] : tensor<6x301xf32> to tensor<6x5xf32>
  %b = tensor.extract_slice %r[0, 3] [6, 5] [1, 1] : tensor<6x301xf32> to tensor<6x5xf32>
  return %a, %b : tensor<6x5xf32>, tensor<6x5xf32>
}
func.func private @ascending_keys(%a: f32, %b: f32) -> i1 {
  %c = arith.cmpf olt, %a, %b : f32
  return %c : i1
}

// -----

// A float32 cumsum summed in float64 (the decomposition's form): the scan
// reads the float32 input, extending each element, keeps its running sums
// in f64 registers and stores them rounded into a float32 result, which
// replaces the rounding op; no f64 copy of the input or the output is read.
// CHECK-LABEL: func.func @widened_scan_reads_and_stores_narrow(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<3x9xf32>
// CHECK:         %[[OUT:.+]] = tensor.empty() : tensor<3x9xf32>
// CHECK:         scf.for
// CHECK:           scf.for {{.+}} -> (tensor<3x9xf32>, f64)
// CHECK:             %[[E:.+]] = tensor.extract %[[X]]
// CHECK-NEXT:        %[[W:.+]] = arith.extf %[[E]] : f32 to f64
// CHECK-NEXT:        %[[S:.+]] = arith.addf %{{.+}}, %[[W]] : f64
// CHECK-NEXT:        %[[N:.+]] = arith.truncf %[[S]] : f64 to f32
// CHECK-NEXT:        tensor.insert %[[N]] into %{{.+}} : tensor<3x9xf32>
// CHECK-NOT:     arith.truncf %{{.+}} : f64 to f32
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @widened_scan_reads_and_stores_narrow(%x: tensor<3x9xf32>) -> tensor<3x9xf32> {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<3x9xf64>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<3x9xf32>) outs(%e : tensor<3x9xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    linalg.yield %w : f64
  } -> tensor<3x9xf64>
  %init = linalg.fill ins(%zero : f64) outs(%e : tensor<3x9xf64>) -> tensor<3x9xf64>
  %ea = tensor.empty() : tensor<3xf64>
  %acc = linalg.fill ins(%zero : f64) outs(%ea : tensor<3xf64>) -> tensor<3xf64>
  %r:2 = "lowerline.tm_scan"(%wide, %init, %acc) {combiner = @add_f64, dimension = 1 : i64, inclusive = true}
      : (tensor<3x9xf64>, tensor<3x9xf64>, tensor<3xf64>) -> (tensor<3x9xf64>, tensor<3xf64>)
  %en = tensor.empty() : tensor<3x9xf32>
  %narrow = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r#0 : tensor<3x9xf64>) outs(%en : tensor<3x9xf32>) {
  ^bb0(%in: f64, %out: f32):
    %t = arith.truncf %in : f64 to f32
    linalg.yield %t : f32
  } -> tensor<3x9xf32>
  return %narrow : tensor<3x9xf32>
}
func.func private @add_f64(%a: f64, %b: f64) -> f64 {
  %s = arith.addf %a, %b : f64
  return %s : f64
}

// -----

// The wide output is also returned: the scan keeps f64 tensors, the
// rounding stays a separate op.
// CHECK-LABEL: func.func @widened_scan_read_wide_stays(
// CHECK:         scf.for {{.+}} -> (tensor<3x9xf64>, f64)
// CHECK:         linalg.generic
// CHECK:           arith.truncf
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @widened_scan_read_wide_stays(%x: tensor<3x9xf32>) -> (tensor<3x9xf32>, tensor<3x9xf64>) {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<3x9xf64>
  %wide = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<3x9xf32>) outs(%e : tensor<3x9xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    linalg.yield %w : f64
  } -> tensor<3x9xf64>
  %ea = tensor.empty() : tensor<3xf64>
  %r:2 = "lowerline.tm_scan"(%wide, %e, %ea) {combiner = @add_wide, dimension = 1 : i64, inclusive = true}
      : (tensor<3x9xf64>, tensor<3x9xf64>, tensor<3xf64>) -> (tensor<3x9xf64>, tensor<3xf64>)
  %en = tensor.empty() : tensor<3x9xf32>
  %narrow = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%r#0 : tensor<3x9xf64>) outs(%en : tensor<3x9xf32>) {
  ^bb0(%in: f64, %out: f32):
    %t = arith.truncf %in : f64 to f32
    linalg.yield %t : f32
  } -> tensor<3x9xf32>
  return %narrow, %r#0 : tensor<3x9xf32>, tensor<3x9xf64>
}
func.func private @add_wide(%a: f64, %b: f64) -> f64 {
  %s = arith.addf %a, %b : f64
  return %s : f64
}
