// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fuse-elementwise))" \
// RUN:   --split-input-file | FileCheck %s

// A chain of three elementwise generics becomes one; the body is the
// producers' bodies in order, then the consumer's.
// CHECK-LABEL: func.func @fuses_chain(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[Y:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[X]] : f32
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[E]], %[[Y]] : f32
// CHECK-NEXT:      %[[N:.+]] = arith.negf %[[S]] : f32
// CHECK-NEXT:      linalg.yield %[[N]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]] : tensor<4x8xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @fuses_chain(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%1 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// The consumer reads the producer's result transposed: the producer's maps
// are composed with the consumer's (the row broadcast of %v becomes a read
// along d0); the consumer's own read of %a through the same map as the
// composed one is deduplicated into one input.
// CHECK-DAG:   #[[$TR:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG:   #[[$COL:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @fuses_transposed_read(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[V:[a-z0-9]+]]: tensor<8xf32>, %[[C:[a-z0-9]+]]: tensor<8x4xf32>)
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<8x4xf32>
// CHECK:         %[[R:.+]] = linalg.generic {indexing_maps = [#[[$TR]], #[[$COL]], #[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:        ins(%[[A]], %[[V]], %[[C]] : tensor<4x8xf32>, tensor<8xf32>, tensor<8x4xf32>) outs(%[[E]] : tensor<8x4xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[Y:.+]]: f32, %[[Z:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      %[[M:.+]] = arith.mulf %[[S]], %[[Z]] : f32
// CHECK-NEXT:      %[[D:.+]] = arith.subf %[[M]], %[[X]] : f32
// CHECK-NEXT:      linalg.yield %[[D]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]] : tensor<8x4xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @fuses_transposed_read(%a: tensor<4x8xf32>, %v: tensor<8xf32>, %c: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %v : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %1 = linalg.generic {indexing_maps = [#tr, #id, #tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %c, %a : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %n = arith.subf %m, %z : f32
    linalg.yield %n : f32
  } -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// -----

// A producer with two users is left alone (fusing would compute it twice).
// CHECK-LABEL: func.func @keeps_producer_with_two_users(
// CHECK:         %[[P:.+]] = linalg.generic
// CHECK:           math.exp
// CHECK:         %[[Q:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[P]] :
// CHECK:           arith.negf
// CHECK:         return %[[P]], %[[Q]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @keeps_producer_with_two_users(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A reduction producer (row sums) is left alone.
// CHECK-LABEL: func.func @keeps_reduction_producer(
// CHECK:         %[[P:.+]] = linalg.generic
// CHECK-SAME:        iterator_types = ["parallel", "reduction"]
// CHECK:         %[[Q:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[P]] : tensor<4xf32>)
// CHECK:         return %[[Q]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
func.func @keeps_reduction_producer(%a: tensor<4x8xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.addf %x, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%0 : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A consumer that broadcasts the producer's result (not a permutation map)
// is left alone.
// CHECK-LABEL: func.func @keeps_broadcasting_consumer(
// CHECK:         %[[P:.+]] = linalg.generic
// CHECK:         %[[Q:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[P]] : tensor<8xf32>)
// CHECK:         return %[[Q]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>
func.func @keeps_broadcasting_consumer(%v: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%v : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Contractions stay named ops: an elementwise producer of a matmul operand
// and an elementwise consumer of its result are not fused into it.
// CHECK-LABEL: func.func @keeps_matmul_named(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<8x16xf32>, %[[C:[a-z0-9]+]]: tensor<4x16xf32>)
// CHECK:         %[[P:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[A]] : tensor<4x8xf32>)
// CHECK:         %[[M:.+]] = linalg.matmul ins(%[[P]], %[[B]] : tensor<4x8xf32>, tensor<8x16xf32>) outs(%[[C]] : tensor<4x16xf32>)
// CHECK:         %[[Q:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[M]] : tensor<4x16xf32>)
// CHECK:         return %[[Q]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @keeps_matmul_named(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %1 = linalg.matmul ins(%0, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%1 : tensor<4x16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// -----

// linalg.index in a producer counts its own loops: read transposed by the
// consumer, fusing would need the indices permuted, so the pair stays apart.
// CHECK-LABEL: func.func @index_transposed(
// CHECK:         linalg.index 0
// CHECK:         linalg.yield
// CHECK:         linalg.generic
// CHECK:         arith.negf
func.func @index_transposed(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %s = arith.addf %x, %f : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<4x8xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// -----

// An elementwise producer fuses into a reduction that reads it through a
// permutation: the row sum of (x - m)^2 reads x, not a squared temporary.
// CHECK-LABEL: func.func @fuses_into_reduction(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[M:[a-z0-9]+]]: tensor<4xf32>
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:        iterator_types = ["parallel", "reduction"]
// CHECK-SAME:        ins(%[[A]], %[[M]] : tensor<4x8xf32>, tensor<4xf32>)
// CHECK:           arith.subf
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @fuses_into_reduction(%a: tensor<4x8xf32>, %m: tensor<4xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %m : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    %r = arith.mulf %d, %d : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%0 : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.addf %x, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A producer of one subtraction (a row's deviations from its mean) with two
// users is repeated in both, instead of being stored for both to read.
// CHECK-LABEL: func.func @repeats_cheap_producer(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[M:[a-z0-9]+]]: tensor<4xf32>
// CHECK:         %[[S:.+]] = linalg.generic
// CHECK-SAME:        iterator_types = ["parallel", "reduction"]
// CHECK-SAME:        ins(%[[A]], %[[M]] :
// CHECK:           arith.subf
// CHECK:         %[[N:.+]] = linalg.generic
// CHECK-SAME:        iterator_types = ["parallel", "parallel"]
// CHECK-SAME:        ins(%[[A]], %[[M]], %[[S]] :
// CHECK:           arith.subf
// CHECK:           arith.mulf
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[N]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @repeats_cheap_producer(%a: tensor<4x8xf32>, %m: tensor<4xf32>, %acc: tensor<4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %m : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%0 : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.addf %x, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %2 = linalg.generic {indexing_maps = [#id, #rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %1 : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %r = arith.mulf %x, %s : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// Not fused: the producer broadcasts along the reduced loop, which only its
// result indexes; the fused reduction would have no bound for that loop.
// CHECK-LABEL: func.func @keeps_broadcast_producer_of_reduction(
// CHECK:         %[[P:.+]] = linalg.generic
// CHECK-SAME:        iterator_types = ["parallel", "parallel"]
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:        iterator_types = ["parallel", "reduction"]
// CHECK-SAME:        ins(%[[P]] :
// CHECK:         return %[[R]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @keeps_broadcast_producer_of_reduction(%v: tensor<4xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#rows, #id], iterator_types = ["parallel", "parallel"]}
      ins(%v : tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%0 : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.addf %x, %o : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
