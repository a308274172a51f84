// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-collapse-broadcast-batch-matmul),canonicalize)" \
// RUN:   --split-input-file | FileCheck %s

// A batch matmul by a weight broadcast over the batch (torch's x @ w on a
// non-contiguous 3-D x) becomes one matmul over all 3 * 5 rows; the bias add
// is collapsed with it, so tile-and-fuse still fuses it; the broadcast is gone.
// CHECK-LABEL: func.func @collapses_broadcast_weight_and_bias(
// CHECK-SAME:      %[[A:.+]]: tensor<3x5x7xf32>, %[[W:.+]]: tensor<7x9xf32>, %[[BIAS:.+]]: tensor<9xf32>
// CHECK:         %[[ROWS:.+]] = tensor.collapse_shape %[[A]] {{\[\[}}0, 1], [2]] : tensor<3x5x7xf32> into tensor<15x7xf32>
// CHECK:         %[[FILL:.+]] = linalg.fill {{.*}} -> tensor<15x9xf32>
// CHECK:         %[[MM:.+]] = linalg.matmul ins(%[[ROWS]], %[[W]] : tensor<15x7xf32>, tensor<7x9xf32>) outs(%[[FILL]] : tensor<15x9xf32>)
// CHECK:         %[[ADD:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[MM]], %[[BIAS]] : tensor<15x9xf32>, tensor<9xf32>)
// CHECK:         %[[OUT:.+]] = tensor.expand_shape %[[ADD]] {{\[\[}}0, 1], [2]] output_shape [3, 5, 9] : tensor<15x9xf32> into tensor<3x5x9xf32>
// CHECK-NOT:     linalg.batch_matmul
// CHECK:         return %[[OUT]]
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bias = affine_map<(d0, d1, d2) -> (d2)>
func.func @collapses_broadcast_weight_and_bias(%a: tensor<3x5x7xf32>, %w: tensor<7x9xf32>, %bias: tensor<9xf32>) -> tensor<3x5x9xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x7x9xf32>
  %wb = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%w : tensor<7x9xf32>) outs(%e : tensor<3x7x9xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<3x7x9xf32>
  %e2 = tensor.empty() : tensor<3x5x9xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e2 : tensor<3x5x9xf32>) -> tensor<3x5x9xf32>
  %c = linalg.batch_matmul ins(%a, %wb : tensor<3x5x7xf32>, tensor<3x7x9xf32>) outs(%fill : tensor<3x5x9xf32>) -> tensor<3x5x9xf32>
  %r = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %bias : tensor<3x5x9xf32>, tensor<9xf32>) outs(%e2 : tensor<3x5x9xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<3x5x9xf32>
  return %r : tensor<3x5x9xf32>
}

// -----

// linalg.broadcast along the batch is recognized too; with no elementwise
// consumer the matmul's result is expanded back directly.
// CHECK-LABEL: func.func @collapses_linalg_broadcast(
// CHECK:         %[[MM:.+]] = linalg.matmul ins({{.*}} : tensor<8x4xf32>, tensor<4x6xf32>)
// CHECK:         %[[OUT:.+]] = tensor.expand_shape %[[MM]] {{\[\[}}0, 1], [2]] output_shape [1, 8, 6]
// CHECK-NOT:     linalg.broadcast
// CHECK:         return %[[OUT]]
func.func @collapses_linalg_broadcast(%a: tensor<1x8x4xf32>, %w: tensor<4x6xf32>, %init: tensor<1x8x6xf32>) -> tensor<1x8x6xf32> {
  %e = tensor.empty() : tensor<1x4x6xf32>
  %wb = linalg.broadcast ins(%w : tensor<4x6xf32>) outs(%e : tensor<1x4x6xf32>) dimensions = [0]
  %c = linalg.batch_matmul ins(%a, %wb : tensor<1x8x4xf32>, tensor<1x4x6xf32>) outs(%init : tensor<1x8x6xf32>) -> tensor<1x8x6xf32>
  return %c : tensor<1x8x6xf32>
}

// -----

// A consumer that reads a per-batch value (broadcast over the rows only)
// cannot be collapsed: the chain stops before it, the matmul is still one.
// CHECK-LABEL: func.func @stops_before_per_batch_operand(
// CHECK:         %[[MM:.+]] = linalg.matmul
// CHECK:         %[[OUT:.+]] = tensor.expand_shape %[[MM]]
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[OUT]], %{{.+}} : tensor<2x3x4xf32>, tensor<2x4xf32>)
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#perbatch = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @stops_before_per_batch_operand(%a: tensor<2x3x5xf32>, %w: tensor<5x4xf32>, %s: tensor<2x4xf32>, %init: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %e = tensor.empty() : tensor<2x5x4xf32>
  %wb = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%w : tensor<5x4xf32>) outs(%e : tensor<2x5x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x5x4xf32>
  %c = linalg.batch_matmul ins(%a, %wb : tensor<2x3x5xf32>, tensor<2x5x4xf32>) outs(%init : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %e2 = tensor.empty() : tensor<2x3x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #perbatch, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %s : tensor<2x3x4xf32>, tensor<2x4xf32>) outs(%e2 : tensor<2x3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

// Not fired: B differs per batch entry (attention's scores @ values).
// CHECK-LABEL: func.func @keeps_batched_operands(
// CHECK:         linalg.batch_matmul
// CHECK-NOT:     linalg.matmul
func.func @keeps_batched_operands(%a: tensor<4x3x5xf32>, %b: tensor<4x5x6xf32>, %init: tensor<4x3x6xf32>) -> tensor<4x3x6xf32> {
  %c = linalg.batch_matmul ins(%a, %b : tensor<4x3x5xf32>, tensor<4x5x6xf32>) outs(%init : tensor<4x3x6xf32>) -> tensor<4x3x6xf32>
  return %c : tensor<4x3x6xf32>
}

// -----

// Not fired: a broadcast that is not a plain copy (it scales the weight).
// CHECK-LABEL: func.func @keeps_computed_broadcast(
// CHECK:         linalg.batch_matmul
// CHECK-NOT:     linalg.matmul
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @keeps_computed_broadcast(%a: tensor<2x3x5xf32>, %w: tensor<5x4xf32>, %init: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %e = tensor.empty() : tensor<2x5x4xf32>
  %wb = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%w : tensor<5x4xf32>) outs(%e : tensor<2x5x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.addf %in, %in : f32
    linalg.yield %d : f32
  } -> tensor<2x5x4xf32>
  %c = linalg.batch_matmul ins(%a, %wb : tensor<2x3x5xf32>, tensor<2x5x4xf32>) outs(%init : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %c : tensor<2x3x4xf32>
}

// -----

// Integer operands extended as unsigned keep that meaning in the matmul.
// CHECK-LABEL: func.func @keeps_unsigned_cast(
// CHECK:         linalg.matmul {cast = #linalg.type_fn<cast_unsigned>} ins({{.*}} : tensor<6x4xi8>, tensor<4x5xi8>) outs({{.*}} : tensor<6x5xi32>)
func.func @keeps_unsigned_cast(%a: tensor<2x3x4xi8>, %w: tensor<4x5xi8>, %init: tensor<2x3x5xi32>) -> tensor<2x3x5xi32> {
  %e = tensor.empty() : tensor<2x4x5xi8>
  %wb = linalg.broadcast ins(%w : tensor<4x5xi8>) outs(%e : tensor<2x4x5xi8>) dimensions = [0]
  %c = linalg.batch_matmul {cast = #linalg.type_fn<cast_unsigned>} ins(%a, %wb : tensor<2x3x4xi8>, tensor<2x4x5xi8>) outs(%init : tensor<2x3x5xi32>) -> tensor<2x3x5xi32>
  return %c : tensor<2x3x5xi32>
}

// -----

// A dynamic row count (a sequence-first encoder over a dynamic batch:
// lowerline.compile(..., dynamic=...)) merges with the batch into a dynamic
// row count; the empties are sized and the result expanded with tensor.dim.
// CHECK-LABEL: func.func @collapses_dynamic_rows(
// CHECK-SAME:      %[[A:.+]]: tensor<3x?x7xf32>, %[[W:.+]]: tensor<7x9xf32>, %[[BIAS:.+]]: tensor<9xf32>
// CHECK:         %[[ROWS:.+]] = tensor.collapse_shape %[[A]] {{\[\[}}0, 1], [2]] : tensor<3x?x7xf32> into tensor<?x7xf32>
// CHECK:         %[[FILL:.+]] = linalg.fill {{.*}} -> tensor<?x9xf32>
// CHECK:         %[[MM:.+]] = linalg.matmul ins(%[[ROWS]], %[[W]] : tensor<?x7xf32>, tensor<7x9xf32>) outs(%[[FILL]] : tensor<?x9xf32>)
// CHECK:         %[[ADD:.+]] = linalg.generic {{.*}} ins(%[[MM]], %[[BIAS]] : tensor<?x9xf32>, tensor<9xf32>)
// CHECK:         %[[M:.+]] = tensor.dim %[[A]], %{{.+}} : tensor<3x?x7xf32>
// CHECK:         %[[OUT:.+]] = tensor.expand_shape %[[ADD]] {{\[\[}}0, 1], [2]] output_shape [3, %[[M]], 9] : tensor<?x9xf32> into tensor<3x?x9xf32>
// CHECK-NOT:     linalg.batch_matmul
// CHECK:         return %[[OUT]]
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bias = affine_map<(d0, d1, d2) -> (d2)>
func.func @collapses_dynamic_rows(%a: tensor<3x?x7xf32>, %w: tensor<7x9xf32>, %bias: tensor<9xf32>) -> tensor<3x?x9xf32> {
  %zero = arith.constant 0.0 : f32
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c1 : tensor<3x?x7xf32>
  %e = tensor.empty() : tensor<3x7x9xf32>
  %wb = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%w : tensor<7x9xf32>) outs(%e : tensor<3x7x9xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<3x7x9xf32>
  %e2 = tensor.empty(%m) : tensor<3x?x9xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e2 : tensor<3x?x9xf32>) -> tensor<3x?x9xf32>
  %c = linalg.batch_matmul ins(%a, %wb : tensor<3x?x7xf32>, tensor<3x7x9xf32>) outs(%fill : tensor<3x?x9xf32>) -> tensor<3x?x9xf32>
  %r = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %bias : tensor<3x?x9xf32>, tensor<9xf32>) outs(%e2 : tensor<3x?x9xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<3x?x9xf32>
  return %r : tensor<3x?x9xf32>
}

// -----

// A dynamic batch (attention's in-projection over a dynamic sequence, made
// the batch by a transpose): one matmul over ? rows (the batch times 5),
// the bias collapsed with it, expanded back with the batch's size.
// CHECK-LABEL: func.func @collapses_dynamic_batch(
// CHECK-SAME:      %[[A:.+]]: tensor<?x5x7xf32>, %[[W:.+]]: tensor<7x9xf32>, %[[BIAS:.+]]: tensor<9xf32>, %[[B:.+]]: index
// CHECK:         %[[ROWS:.+]] = tensor.collapse_shape %[[A]] {{\[\[}}0, 1], [2]] : tensor<?x5x7xf32> into tensor<?x7xf32>
// CHECK:         %[[E:.+]] = tensor.empty(%{{.+}}) : tensor<?x9xf32>
// CHECK:         %[[FILL:.+]] = linalg.fill {{.*}} outs(%[[E]] : tensor<?x9xf32>)
// CHECK:         %[[MM:.+]] = linalg.matmul ins(%[[ROWS]], %[[W]] : tensor<?x7xf32>, tensor<7x9xf32>) outs(%[[FILL]] : tensor<?x9xf32>)
// CHECK:         %[[ADD:.+]] = linalg.generic {{.*}} ins(%[[MM]], %[[BIAS]] : tensor<?x9xf32>, tensor<9xf32>)
// CHECK:         %[[D:.+]] = tensor.dim %[[A]], %{{.+}}
// CHECK:         tensor.expand_shape %[[ADD]] {{\[\[}}0, 1], [2]] output_shape [%[[D]], 5, 9] : tensor<?x9xf32> into tensor<?x5x9xf32>
// CHECK-NOT:     linalg.batch_matmul
func.func @collapses_dynamic_batch(%a: tensor<?x5x7xf32>, %w: tensor<7x9xf32>, %bias: tensor<9xf32>, %b: index) -> tensor<?x5x9xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%b) : tensor<?x7x9xf32>
  %wb = linalg.broadcast ins(%w : tensor<7x9xf32>) outs(%e : tensor<?x7x9xf32>) dimensions = [0]
  %e2 = tensor.empty(%b) : tensor<?x5x9xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x5x9xf32>) -> tensor<?x5x9xf32>
  %c = linalg.batch_matmul ins(%a, %wb : tensor<?x5x7xf32>, tensor<?x7x9xf32>) outs(%fill : tensor<?x5x9xf32>) -> tensor<?x5x9xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %bias : tensor<?x5x9xf32>, tensor<9xf32>) outs(%e2 : tensor<?x5x9xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?x5x9xf32>
  return %r : tensor<?x5x9xf32>
}
