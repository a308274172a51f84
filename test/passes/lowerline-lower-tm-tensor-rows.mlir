// Scatters of whole rows (index_add, index_put of rows) with a vector width:
// each update row is combined into its destination row with vectors, the
// index still checked once per row; wide rows are split among threads by
// columns. Other scatters stay scalar loops, with a remark saying why.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-lower-tm-tensor{vector-bits=256 threads=2 explain})" \
// RUN:   --split-input-file 2>%t.explain | FileCheck %s
// RUN: FileCheck %s --input-file=%t.explain --check-prefix=EXPLAIN

// index_add of rows of 37 columns: vectors of 8 for 32 columns, one of 5 for
// the rest, inside the bounds check of the row's index.
// EXPLAIN: lowerline-lower-tm-tensor-rows.mlir:[[@LINE+18]]:{{[0-9]+}}: remark: lowerline.tm_scatter: rows combined as vectors of 8, columns split among 1 thread(s) [lowerline-lower-tm-tensor]
// CHECK-LABEL: func.func @row_scatter_is_vectorized(
// CHECK-SAME:      %[[U:[a-z0-9]+]]: tensor<9x37xf32>, %[[IDX:[a-z0-9]+]]: tensor<9x1xi64>, %[[O:[a-z0-9]+]]: tensor<6x37xf32>)
// CHECK:         scf.for %[[N:.+]] = {{.+}} iter_args(%[[A:.+]] = %[[O]])
// CHECK:           %[[ROW:.+]] = tensor.extract %[[IDX]][%[[N]], %{{.+}}] : tensor<9x1xi64>
// CHECK:           %[[OK:.+]] = arith.andi
// CHECK-NEXT:      scf.if %[[OK]]
// CHECK:             scf.for %[[C:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[B:.+]] = %[[A]])
// CHECK:               %[[UV:.+]] = vector.transfer_read %[[U]][%[[N]], %[[C]]], %{{.+}} {in_bounds = [true]} : tensor<9x37xf32>, vector<8xf32>
// CHECK:               %[[OV:.+]] = vector.transfer_read %[[B]][%{{.+}}, %[[C]]], %{{.+}} {in_bounds = [true]} : tensor<6x37xf32>, vector<8xf32>
// CHECK:               %[[S:.+]] = arith.addf %[[UV]], %[[OV]] : vector<8xf32>
// CHECK:               vector.transfer_write %[[S]], %[[B]][%{{.+}}, %[[C]]] {in_bounds = [true]} : vector<8xf32>, tensor<6x37xf32>
// CHECK:             arith.addf %{{.+}}, %{{.+}} : vector<5xf32>
// CHECK:           } else {
// CHECK-NEXT:        scf.yield %[[A]]
// CHECK-NOT:     tensor.insert
// CHECK-NOT:     lowerline.tm_scatter
func.func @row_scatter_is_vectorized(%u: tensor<9x37xf32>, %i: tensor<9x1xi64>, %o: tensor<6x37xf32>) -> tensor<6x37xf32> {
  %r = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @combine_add, dimension_map = array<i64: 0>, unique_indices = false}
      : (tensor<9x37xf32>, tensor<9x1xi64>, tensor<6x37xf32>) -> tensor<6x37xf32>
  return %r : tensor<6x37xf32>
}
func.func private @combine_add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// Rows of 257 columns: two threads own 128 columns each (scf.forall over
// slices, every update applied in order), the last column after them.
// EXPLAIN: lowerline-lower-tm-tensor-rows.mlir:[[@LINE+14]]:{{[0-9]+}}: remark: lowerline.tm_scatter: rows combined as vectors of 8, columns split among 2 thread(s) [lowerline-lower-tm-tensor]
// CHECK-LABEL: func.func @wide_rows_split_among_threads(
// CHECK-SAME:      %[[U:[a-z0-9]+]]: tensor<?x257xf32>, %[[IDX:[a-z0-9]+]]: tensor<?x1xi32>, %[[O:[a-z0-9]+]]: tensor<?x257xf32>)
// CHECK:         %[[F:.+]] = scf.forall (%[[T:.+]]) in (2) shared_outs(%[[S:.+]] = %[[O]])
// CHECK:           %[[FIRST:.+]] = arith.muli %[[T]]
// CHECK:           %[[PIECE:.+]] = tensor.extract_slice %[[S]][0, %[[FIRST]]] [%{{.+}}, 128] [1, 1] : tensor<?x257xf32> to tensor<?x128xf32>
// CHECK:           scf.for
// CHECK:             arith.maximumf %{{.+}}, %{{.+}} : vector<8xf32>
// CHECK:           scf.forall.in_parallel
// CHECK-NEXT:        tensor.parallel_insert_slice %{{.+}} into %[[S]][0, %[[FIRST]]] [%{{.+}}, 128] [1, 1]
// CHECK:         scf.for {{.+}} iter_args(%{{.+}} = %[[F]])
// CHECK:           arith.maximumf %{{.+}}, %{{.+}} : vector<1xf32>
// CHECK-NOT:     tensor.insert
func.func @wide_rows_split_among_threads(%u: tensor<?x257xf32>, %i: tensor<?x1xi32>, %o: tensor<?x257xf32>) -> tensor<?x257xf32> {
  %r = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @combine_max, dimension_map = array<i64: 0>, unique_indices = false}
      : (tensor<?x257xf32>, tensor<?x1xi32>, tensor<?x257xf32>) -> tensor<?x257xf32>
  return %r : tensor<?x257xf32>
}
func.func private @combine_max(%a: f32, %b: f32) -> f32 {
  %m = arith.maximumf %a, %b : f32
  return %m : f32
}

// -----

// index_put of rows (overwrite: the combiner returns the update) of a 3-D
// tensor at two leading indices; constants in a combiner become splats.
// CHECK-LABEL: func.func @overwrite_and_constant_combiners(
// CHECK:         vector.transfer_read {{.+}} : tensor<5x3xi32>, vector<3xi32>
// CHECK:         vector.transfer_write {{.+}} : vector<3xi32>, tensor<4x6x3xi32>
// CHECK:         arith.constant dense<2> : vector<3xi32>
// CHECK:         arith.muli {{.+}} : vector<3xi32>
// CHECK-NOT:     tensor.insert
func.func @overwrite_and_constant_combiners(%u: tensor<5x3xi32>, %i: tensor<5x2xi64>, %o: tensor<4x6x3xi32>) -> (tensor<4x6x3xi32>, tensor<4x6x3xi32>) {
  %r = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @overwrite, dimension_map = array<i64: 0, 1>, unique_indices = false}
      : (tensor<5x3xi32>, tensor<5x2xi64>, tensor<4x6x3xi32>) -> tensor<4x6x3xi32>
  %s = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @twice_plus, dimension_map = array<i64: 0, 1>, unique_indices = false}
      : (tensor<5x3xi32>, tensor<5x2xi64>, tensor<4x6x3xi32>) -> tensor<4x6x3xi32>
  return %r, %s : tensor<4x6x3xi32>, tensor<4x6x3xi32>
}
func.func private @overwrite(%a: i32, %b: i32) -> i32 {
  return %a : i32
}
func.func private @twice_plus(%a: i32, %b: i32) -> i32 {
  %c = arith.constant 2 : i32
  %m = arith.muli %a, %c : i32
  %s = arith.addi %m, %b : i32
  return %s : i32
}

// -----

// scatter_add of single elements (an index per dimension): scalar loops.
// EXPLAIN: lowerline-lower-tm-tensor-rows.mlir:[[@LINE+6]]:{{[0-9]+}}: remark: lowerline.tm_scatter: left as scalar loops: not vectorized: each update is one element, not a whole row of the output [lowerline-lower-tm-tensor]
// CHECK-LABEL: func.func @element_scatter_stays_scalar(
// CHECK-NOT:     vector.
// CHECK:         tensor.insert
// CHECK-NOT:     vector.
func.func @element_scatter_stays_scalar(%u: tensor<9xf32>, %i: tensor<9x2xi64>, %o: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %r = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @combine_add, dimension_map = array<i64: 0, 1>, unique_indices = false}
      : (tensor<9xf32>, tensor<9x2xi64>, tensor<6x4xf32>) -> tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}
func.func private @combine_add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// Rows indexed along dimension 1, not the leading one: scalar loops.
// EXPLAIN: lowerline-lower-tm-tensor-rows.mlir:[[@LINE+5]]:{{[0-9]+}}: remark: lowerline.tm_scatter: left as scalar loops: not vectorized: its indices address dimensions [1], not the leading ones [lowerline-lower-tm-tensor]
// CHECK-LABEL: func.func @scatter_along_inner_dim_stays_scalar(
// CHECK-NOT:     vector.
// CHECK:         tensor.insert
func.func @scatter_along_inner_dim_stays_scalar(%u: tensor<9x4xf32>, %i: tensor<9x1xi64>, %o: tensor<9x6xf32>) -> tensor<9x6xf32> {
  %r = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @combine_add, dimension_map = array<i64: 1>, unique_indices = false}
      : (tensor<9x4xf32>, tensor<9x1xi64>, tensor<9x6xf32>) -> tensor<9x6xf32>
  return %r : tensor<9x6xf32>
}
func.func private @combine_add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// A combiner that calls a function does not run lane by lane: scalar loops.
// EXPLAIN: lowerline-lower-tm-tensor-rows.mlir:[[@LINE+6]]:{{[0-9]+}}: remark: lowerline.tm_scatter: left as scalar loops: not vectorized: its combiner holds 'func.call', not an elementwise arith/math op [lowerline-lower-tm-tensor]
// CHECK-LABEL: func.func @opaque_combiner_stays_scalar(
// CHECK-NOT:     vector.
// CHECK:         func.call @helper
// CHECK-NOT:     vector.
func.func @opaque_combiner_stays_scalar(%u: tensor<9x16xf32>, %i: tensor<9x1xi64>, %o: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %r = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @combine_call, dimension_map = array<i64: 0>, unique_indices = false}
      : (tensor<9x16xf32>, tensor<9x1xi64>, tensor<6x16xf32>) -> tensor<6x16xf32>
  return %r : tensor<6x16xf32>
}
func.func private @helper(%a: f32, %b: f32) -> f32
func.func private @combine_call(%a: f32, %b: f32) -> f32 {
  %s = func.call @helper(%a, %b) : (f32, f32) -> f32
  return %s : f32
}

// -----

// torch-mlir's index_put of rows: each update [n, 1, row], its dimension of
// one over the indexed one; the row lands at the index alone.
// CHECK-LABEL: func.func @index_put_rows_with_unit_dim(
// CHECK-SAME:      %[[U:[a-z0-9]+]]: tensor<4x1x9xf32>
// CHECK:         scf.for %[[N:.+]] = {{.+}} iter_args
// CHECK:           scf.for %[[K:.+]] = {{.+}} iter_args
// CHECK:             %[[ROW:.+]] = arith.select
// CHECK:             scf.if
// CHECK:               vector.transfer_read %[[U]][%[[N]], %[[K]], %{{.+}}]
// CHECK:               vector.transfer_read %{{.+}}[%[[ROW]], %{{.+}}]{{.+}} : tensor<6x9xf32>, vector<8xf32>
// CHECK:               arith.addf {{.+}} : vector<1xf32>
// CHECK-NOT:     tensor.insert
func.func @index_put_rows_with_unit_dim(%u: tensor<4x1x9xf32>, %i: tensor<4x1xi64>, %o: tensor<6x9xf32>) -> tensor<6x9xf32> {
  %r = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @combine_add, dimension_map = array<i64: 0>, unique_indices = false}
      : (tensor<4x1x9xf32>, tensor<4x1xi64>, tensor<6x9xf32>) -> tensor<6x9xf32>
  return %r : tensor<6x9xf32>
}
func.func private @combine_add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}

// -----

// An update spanning two rows along the indexed dimension is not one row:
// scalar loops.
// EXPLAIN: lowerline-lower-tm-tensor-rows.mlir:[[@LINE+5]]:{{[0-9]+}}: remark: lowerline.tm_scatter: left as scalar loops: not vectorized: its updates span several rows along an indexed dimension [lowerline-lower-tm-tensor]
// CHECK-LABEL: func.func @update_of_two_rows_stays_scalar(
// CHECK-NOT:     vector.
// CHECK:         tensor.insert
func.func @update_of_two_rows_stays_scalar(%u: tensor<4x2x9xf32>, %i: tensor<4x1xi64>, %o: tensor<6x9xf32>) -> tensor<6x9xf32> {
  %r = "lowerline.tm_scatter"(%u, %i, %o) {combiner = @combine_add, dimension_map = array<i64: 0>, unique_indices = false}
      : (tensor<4x2x9xf32>, tensor<4x1xi64>, tensor<6x9xf32>) -> tensor<6x9xf32>
  return %r : tensor<6x9xf32>
}
func.func private @combine_add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b : f32
  return %s : f32
}
