// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-copy-repeated-results))" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(lowerline-copy-repeated-results),buffer-results-to-out-params{hoist-static-allocs modify-public-functions})" \
// RUN:   | FileCheck %s --check-prefix=OUTPARAMS

// An allocation returned twice: the second occurrence returns a fresh
// allocation of the same type (attributes kept), filled by a copy.
// CHECK-LABEL: func.func @copies_alloc_returned_twice(
// CHECK:         %[[A:.+]] = memref.alloc() {alignment = 64 : i64} : memref<7x13xf32>
// CHECK:         linalg.fill ins(%{{.+}} : f32) outs(%[[A]] : memref<7x13xf32>)
// CHECK:         %[[B:.+]] = memref.alloc() {alignment = 64 : i64} : memref<7x13xf32>
// CHECK-NEXT:    memref.copy %[[A]], %[[B]] : memref<7x13xf32> to memref<7x13xf32>
// CHECK-NEXT:    return %[[A]], %[[B]] : memref<7x13xf32>, memref<7x13xf32>
func.func @copies_alloc_returned_twice(%v: f32) -> (memref<7x13xf32>, memref<7x13xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<7x13xf32>
  linalg.fill ins(%v : f32) outs(%a : memref<7x13xf32>)
  return %a, %a : memref<7x13xf32>, memref<7x13xf32>
}

// -----

// Every repeat gets its own copy, also of a dynamically shaped allocation
// (with the same sizes); other results keep their places.
// CHECK-LABEL: func.func @copies_every_repeat(
// CHECK-SAME:      %[[N:[a-z0-9]+]]: index, %[[X:[a-z0-9]+]]: memref<3xi1>)
// CHECK:         %[[A:.+]] = memref.alloc(%[[N]]) : memref<?xf32>
// CHECK:         %[[B:.+]] = memref.alloc(%[[N]]) : memref<?xf32>
// CHECK-NEXT:    memref.copy %[[A]], %[[B]]
// CHECK:         %[[C:.+]] = memref.alloc(%[[N]]) : memref<?xf32>
// CHECK-NEXT:    memref.copy %[[A]], %[[C]]
// CHECK-NEXT:    return %[[A]], %[[X]], %[[B]], %[[C]] :
func.func @copies_every_repeat(%n: index, %x: memref<3xi1>)
    -> (memref<?xf32>, memref<3xi1>, memref<?xf32>, memref<?xf32>) {
  %a = memref.alloc(%n) : memref<?xf32>
  return %a, %x, %a, %a : memref<?xf32>, memref<3xi1>, memref<?xf32>, memref<?xf32>
}

// -----

// A function argument returned twice is left alone:
// buffer-results-to-out-params copies it into each out-param.
// CHECK-LABEL: func.func @keeps_repeated_argument(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: memref<4xf32>)
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         return %[[X]], %[[X]] : memref<4xf32>, memref<4xf32>
func.func @keeps_repeated_argument(%x: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
  return %x, %x : memref<4xf32>, memref<4xf32>
}

// -----

// Distinct allocations, and an allocation returned once next to a view of
// it, are left alone.
// CHECK-LABEL: func.func @keeps_distinct_results(
// CHECK:         %[[A:.+]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[B:.+]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[V:.+]] = memref.subview %[[A]]
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         return %[[A]], %[[B]], %[[V]] :
func.func @keeps_distinct_results() -> (memref<4xf32>, memref<4xf32>, memref<2xf32, strided<[1]>>) {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %v = memref.subview %a[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
  return %a, %b, %v : memref<4xf32>, memref<4xf32>, memref<2xf32, strided<[1]>>
}

// -----

// Followed by buffer-results-to-out-params{hoist-static-allocs}, which
// crashes on `return %a, %a` (llvm-project#219492): each out-param is its own
// buffer, the first computed in place and copied into the second.
// OUTPARAMS-LABEL: func.func @hoists_both_allocations(
// OUTPARAMS-SAME:      %[[V:[a-z0-9]+]]: f32, %[[OUT0:[a-z0-9]+]]: memref<5xf32>, %[[OUT1:[a-z0-9]+]]: memref<5xf32>) {
// OUTPARAMS-NOT:     memref.alloc
// OUTPARAMS:         linalg.fill ins(%[[V]] : f32) outs(%[[OUT0]] : memref<5xf32>)
// OUTPARAMS:         memref.copy %[[OUT0]], %[[OUT1]]
// OUTPARAMS:         return{{$}}
func.func @hoists_both_allocations(%v: f32) -> (memref<5xf32>, memref<5xf32>) {
  %a = memref.alloc() : memref<5xf32>
  linalg.fill ins(%v : f32) outs(%a : memref<5xf32>)
  return %a, %a : memref<5xf32>, memref<5xf32>
}
