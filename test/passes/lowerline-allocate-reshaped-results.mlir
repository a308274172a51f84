// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-allocate-reshaped-results))" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(lowerline-allocate-reshaped-results,lowerline-copy-repeated-results),buffer-results-to-out-params{hoist-static-allocs modify-public-functions},canonicalize)" \
// RUN:   | FileCheck %s --check-prefix=OUTPARAMS

// A collapse of an allocation returned (group norm's (1, groups, c/g, n)
// seen as (c, n)): the allocation is made in the returned shape and the
// computed buffer is its expand_shape.
// CHECK-LABEL: func.func @allocates_collapsed_result(
// CHECK:         %[[R:.+]] = memref.alloc() {alignment = 64 : i64} : memref<8x5xf32>
// CHECK-NEXT:    %[[A:.+]] = memref.expand_shape %[[R]] {{\[}}[0, 1, 2], [3]] output_shape [1, 2, 4, 5] : memref<8x5xf32> into memref<1x2x4x5xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         linalg.fill ins(%{{.+}} : f32) outs(%[[A]] : memref<1x2x4x5xf32>)
// CHECK:         return %[[R]] : memref<8x5xf32>
// Out-params: the kernel writes the out-param through the view, no copy.
// OUTPARAMS-LABEL: func.func @allocates_collapsed_result(
// OUTPARAMS-SAME:      %[[V:[a-z0-9]+]]: f32, %[[OUT:[a-z0-9]+]]: memref<8x5xf32>) {
// OUTPARAMS-NOT:     memref.alloc
// OUTPARAMS:         %[[A:.+]] = memref.expand_shape %[[OUT]]
// OUTPARAMS:         linalg.fill ins(%[[V]] : f32) outs(%[[A]] : memref<1x2x4x5xf32>)
// OUTPARAMS-NOT:     memref.copy
// OUTPARAMS:         return{{$}}
func.func @allocates_collapsed_result(%v: f32) -> memref<8x5xf32> {
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x2x4x5xf32>
  linalg.fill ins(%v : f32) outs(%a : memref<1x2x4x5xf32>)
  %r = memref.collapse_shape %a [[0, 1, 2], [3]] : memref<1x2x4x5xf32> into memref<8x5xf32>
  return %r : memref<8x5xf32>
}

// -----

// A chain of reshapes (a squeeze of an expand): each is inverted, from the
// returned shape back to the allocation's; the same value returned twice is
// the new allocation twice (lowerline-copy-repeated-results then copies it).
// CHECK-LABEL: func.func @inverts_reshape_chain(
// CHECK:         %[[R:.+]] = memref.alloc() : memref<6x2x2xf32>
// CHECK-NEXT:    %[[E:.+]] = memref.expand_shape %[[R]] {{\[}}[0, 1], [2], [3]] output_shape [1, 6, 2, 2] : memref<6x2x2xf32> into memref<1x6x2x2xf32>
// CHECK-NEXT:    %[[A:.+]] = memref.collapse_shape %[[E]] {{\[}}[0], [1], [2, 3]] : memref<1x6x2x2xf32> into memref<1x6x4xf32>
// CHECK:         linalg.fill ins(%{{.+}} : f32) outs(%[[A]] : memref<1x6x4xf32>)
// CHECK:         return %[[R]], %[[R]] :
// OUTPARAMS-LABEL: func.func @inverts_reshape_chain(
// OUTPARAMS-SAME:      %[[V:[a-z0-9]+]]: f32, %[[OUT0:[a-z0-9]+]]: memref<6x2x2xf32>, %[[OUT1:[a-z0-9]+]]: memref<6x2x2xf32>) {
// OUTPARAMS-NOT:     memref.alloc
// OUTPARAMS:         linalg.fill ins(%[[V]] : f32) outs(%{{.+}} : memref<1x6x4xf32>)
// OUTPARAMS:         memref.copy %[[OUT0]], %[[OUT1]]
// OUTPARAMS-NEXT:    return{{$}}
func.func @inverts_reshape_chain(%v: f32) -> (memref<6x2x2xf32>, memref<6x2x2xf32>) {
  %a = memref.alloc() : memref<1x6x4xf32>
  linalg.fill ins(%v : f32) outs(%a : memref<1x6x4xf32>)
  %e = memref.expand_shape %a [[0], [1], [2, 3]] output_shape [1, 6, 2, 2] : memref<1x6x4xf32> into memref<1x6x2x2xf32>
  %r = memref.collapse_shape %e [[0, 1], [2], [3]] : memref<1x6x2x2xf32> into memref<6x2x2xf32>
  return %r, %r : memref<6x2x2xf32>, memref<6x2x2xf32>
}

// -----

// A loop over rows that writes the allocation in place and passes it
// through (a bufferized scf.for on tensors): its result is the allocation.
// A loop that yields another buffer is not followed.
// CHECK-LABEL: func.func @looks_through_passing_loops(
// CHECK:         %[[R:.+]] = memref.alloc() : memref<8x5xf32>
// CHECK-NEXT:    %[[A:.+]] = memref.expand_shape %[[R]] {{\[}}[0, 1], [2]] output_shape [2, 4, 5]
// CHECK:         scf.for {{.+}} iter_args(%{{.+}} = %[[A]])
// CHECK:         %[[B:.+]] = memref.alloc() : memref<2x4x5xf32>
// CHECK:         %[[L:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[B]])
// CHECK:         %[[C:.+]] = memref.collapse_shape %[[L]]
// CHECK:         return %[[R]], %[[C]] :
func.func @looks_through_passing_loops(%v: f32, %w: memref<2x4x5xf32>)
    -> (memref<8x5xf32>, memref<8x5xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<2x4x5xf32>
  %l = scf.for %i = %c0 to %c2 step %c1 iter_args(%buf = %a) -> (memref<2x4x5xf32>) {
    linalg.fill ins(%v : f32) outs(%buf : memref<2x4x5xf32>)
    scf.yield %buf : memref<2x4x5xf32>
  }
  %r = memref.collapse_shape %l [[0, 1], [2]] : memref<2x4x5xf32> into memref<8x5xf32>
  %b = memref.alloc() : memref<2x4x5xf32>
  %m = scf.for %i = %c0 to %c2 step %c1 iter_args(%buf = %b) -> (memref<2x4x5xf32>) {
    scf.yield %w : memref<2x4x5xf32>
  }
  %s = memref.collapse_shape %m [[0, 1], [2]] : memref<2x4x5xf32> into memref<8x5xf32>
  return %r, %s : memref<8x5xf32>, memref<8x5xf32>
}

// -----

// Left alone: an allocation returned as it is, a reshape of an argument
// (no allocation to move) and of a dynamically shaped allocation (its
// inverse needs sizes). The argument's reshape is copied into its
// out-param as before.
// CHECK-LABEL: func.func @keeps_other_results(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: memref<2x3xf32>, %[[N:[a-z0-9]+]]: index)
// CHECK:         %[[A:.+]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[C:.+]] = memref.collapse_shape %[[X]]
// CHECK:         %[[D:.+]] = memref.alloc(%[[N]]) : memref<?x2xf32>
// CHECK:         %[[F:.+]] = memref.collapse_shape %[[D]]
// CHECK-NOT:     memref.alloc
// CHECK:         return %[[A]], %[[C]], %[[F]] :
// OUTPARAMS-LABEL: func.func @keeps_other_results(
// OUTPARAMS:         memref.copy %{{.+}}, %{{.+}} : memref<6xf32> to memref<6xf32>
// OUTPARAMS:         memref.copy %{{.+}}, %{{.+}} : memref<?xf32> to memref<?xf32>
func.func @keeps_other_results(%x: memref<2x3xf32>, %n: index)
    -> (memref<4xf32>, memref<6xf32>, memref<?xf32>) {
  %a = memref.alloc() : memref<4xf32>
  %c = memref.collapse_shape %x [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  %d = memref.alloc(%n) : memref<?x2xf32>
  %f = memref.collapse_shape %d [[0, 1]] : memref<?x2xf32> into memref<?xf32>
  return %a, %c, %f : memref<4xf32>, memref<6xf32>, memref<?xf32>
}
