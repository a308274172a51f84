// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-widen-i1-memrefs)" \
// RUN:   --split-input-file | FileCheck %s

// A store into an i1 buffer inside an scf.for stores the zero-extended byte.
// CHECK-LABEL: func.func @widens_store_in_loop(
// CHECK-SAME:      %[[N:[a-z0-9]+]]: index, %[[B:[a-z0-9]+]]: i1)
// CHECK:         %[[M:.+]] = memref.alloc(%[[N]]) : memref<?xi8>
// CHECK:         scf.for %[[I:[a-z0-9]+]] =
// CHECK:           %[[W:.+]] = arith.extui %[[B]] : i1 to i8
// CHECK:           memref.store %[[W]], %[[M]][%[[I]]] : memref<?xi8>
// CHECK:         memref.dealloc %[[M]] : memref<?xi8>
// CHECK-NOT:     xi1>
// CHECK:         return
func.func @widens_store_in_loop(%n: index, %b: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.alloc(%n) : memref<?xi1>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %b, %m[%i] : memref<?xi1>
  }
  memref.dealloc %m : memref<?xi1>
  return
}

// -----

// A load from an i1 buffer (an alloca here) loads the byte and truncates it.
// CHECK-LABEL: func.func @widens_load_from_alloca(
// CHECK:         %[[A:.+]] = memref.alloca() : memref<8xi8>
// CHECK:         %[[L:.+]] = memref.load %[[A]][%{{.+}}] : memref<8xi8>
// CHECK:         %[[T:.+]] = arith.trunci %[[L]] : i8 to i1
// CHECK:         return %[[T]] : i1
func.func @widens_load_from_alloca(%i: index) -> i1 {
  %a = memref.alloca() : memref<8xi1>
  %v = memref.load %a[%i] : memref<8xi1>
  return %v : i1
}

// -----

// Memref arguments and results are widened; i1 scalars in the same signature stay i1.
// CHECK-LABEL: func.func @widens_signature_keeps_i1_scalars(
// CHECK-SAME:      %[[M:[a-z0-9]+]]: memref<4xi8>, %[[I:[a-z0-9]+]]: index, %[[B:[a-z0-9]+]]: i1) -> (memref<4xi8>, i1)
// CHECK:         %[[W:.+]] = arith.extui %[[B]] : i1 to i8
// CHECK:         memref.store %[[W]], %[[M]][%[[I]]] : memref<4xi8>
// CHECK:         return %[[M]], %[[B]] : memref<4xi8>, i1
func.func @widens_signature_keeps_i1_scalars(%m: memref<4xi1>, %i: index, %b: i1) -> (memref<4xi1>, i1) {
  memref.store %b, %m[%i] : memref<4xi1>
  return %m, %b : memref<4xi1>, i1
}

// -----

// Views of an i1 buffer (subview, collapse_shape, cast) are retyped along the chain.
// CHECK-LABEL: func.func @widens_view_chain(
// CHECK-SAME:      %[[M:[a-z0-9]+]]: memref<4x8xi8>
// CHECK:         %[[S:.+]] = memref.subview %[[M]][0, 0] [2, 8] [1, 1] : memref<4x8xi8> to memref<2x8xi8, strided<[8, 1]>>
// CHECK:         %[[C:.+]] = memref.collapse_shape %[[S]] {{\[}}[0, 1]] : memref<2x8xi8, strided<[8, 1]>> into memref<16xi8, strided<[1]>>
// CHECK:         %[[D:.+]] = memref.cast %[[C]] : memref<16xi8, strided<[1]>> to memref<?xi8, strided<[1]>>
// CHECK:         %[[W:.+]] = arith.extui %{{.+}} : i1 to i8
// CHECK:         memref.store %[[W]], %[[D]][%{{.+}}] : memref<?xi8, strided<[1]>>
func.func @widens_view_chain(%m: memref<4x8xi1>, %b: i1, %i: index) {
  %s = memref.subview %m[0, 0] [2, 8] [1, 1] : memref<4x8xi1> to memref<2x8xi1, strided<[8, 1]>>
  %c = memref.collapse_shape %s [[0, 1]] : memref<2x8xi1, strided<[8, 1]>> into memref<16xi1, strided<[1]>>
  %d = memref.cast %c : memref<16xi1, strided<[1]>> to memref<?xi1, strided<[1]>>
  memref.store %b, %d[%i] : memref<?xi1, strided<[1]>>
  return
}

// -----

// An unranked i1 memref is widened like a ranked one.
// CHECK-LABEL: func.func @widens_unranked(
// CHECK-SAME:      %[[M:[a-z0-9]+]]: memref<*xi8>
// CHECK:         memref.cast %[[M]] : memref<*xi8> to memref<4xi8>
func.func @widens_unranked(%m: memref<*xi1>, %b: i1, %i: index) {
  %c = memref.cast %m : memref<*xi1> to memref<4xi1>
  memref.store %b, %c[%i] : memref<4xi1>
  return
}

// -----

// A global with a dense i1 initial value becomes a global of bytes, 1 for true.
// CHECK:       memref.global "private" constant @mask : memref<4xi8> = dense<[1, 0, 1, 1]>
// CHECK-LABEL: func.func @widens_global_and_get_global(
// CHECK:         %[[G:.+]] = memref.get_global @mask : memref<4xi8>
// CHECK:         %[[L:.+]] = memref.load %[[G]][%{{.+}}] : memref<4xi8>
// CHECK:         %[[T:.+]] = arith.trunci %[[L]] : i8 to i1
// CHECK:         return %[[T]] : i1
memref.global "private" constant @mask : memref<4xi1> = dense<[true, false, true, true]>
func.func @widens_global_and_get_global(%i: index) -> i1 {
  %g = memref.get_global @mask : memref<4xi1>
  %v = memref.load %g[%i] : memref<4xi1>
  return %v : i1
}

// -----

// Splat and uninitialized i1 globals are widened too.
// CHECK:       memref.global "private" @uninit : memref<2xi8> = uninitialized
// CHECK:       memref.global "private" constant @all_true : memref<2x2xi8> = dense<1>
// CHECK-LABEL: func.func @widens_splat_and_uninitialized_globals(
// CHECK:         memref.get_global @uninit : memref<2xi8>
// CHECK:         memref.get_global @all_true : memref<2x2xi8>
memref.global "private" @uninit : memref<2xi1> = uninitialized
memref.global "private" constant @all_true : memref<2x2xi1> = dense<true>
func.func @widens_splat_and_uninitialized_globals() {
  %a = memref.get_global @uninit : memref<2xi1>
  %b = memref.get_global @all_true : memref<2x2xi1>
  return
}

// -----

// A call between two functions that pass i1 memrefs: callee, caller and call agree.
// CHECK-LABEL: func.func @callee(
// CHECK-SAME:      %{{.+}}: memref<4xi8>) -> memref<4xi8>
// CHECK-LABEL: func.func @widens_call_between_functions(
// CHECK-SAME:      %[[M:[a-z0-9]+]]: memref<4xi8>) -> memref<4xi8>
// CHECK:         %[[R:.+]] = call @callee(%[[M]]) : (memref<4xi8>) -> memref<4xi8>
// CHECK:         return %[[R]] : memref<4xi8>
func.func @callee(%m: memref<4xi1>) -> memref<4xi1> {
  return %m : memref<4xi1>
}
func.func @widens_call_between_functions(%m: memref<4xi1>) -> memref<4xi1> {
  %r = func.call @callee(%m) : (memref<4xi1>) -> memref<4xi1>
  return %r : memref<4xi1>
}

// -----

// An external declaration is widened with its callers.
// CHECK:       func.func private @external(memref<4xi8>)
// CHECK-LABEL: func.func @widens_external_declaration(
// CHECK:         call @external(%{{.+}}) : (memref<4xi8>) -> ()
func.func private @external(memref<4xi1>)
func.func @widens_external_declaration(%m: memref<4xi1>) {
  func.call @external(%m) : (memref<4xi1>) -> ()
  return
}

// -----

// An i1 memref carried through scf.for iter_args: init, region argument, yield and result.
// CHECK-LABEL: func.func @widens_for_iter_args(
// CHECK-SAME:      %[[M:[a-z0-9]+]]: memref<4xi8>
// CHECK:         %[[R:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[M]]) -> (memref<4xi8>) {
// CHECK:           %[[W:.+]] = arith.extui %{{.+}} : i1 to i8
// CHECK:           memref.store %[[W]], %[[ACC]]
// CHECK:           scf.yield %[[ACC]] : memref<4xi8>
// CHECK:         return %[[R]] : memref<4xi8>
func.func @widens_for_iter_args(%m: memref<4xi1>, %n: index, %b: i1) -> memref<4xi1> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %m) -> (memref<4xi1>) {
    memref.store %b, %acc[%c0] : memref<4xi1>
    scf.yield %acc : memref<4xi1>
  }
  return %r : memref<4xi1>
}

// -----

// scf.if yielding one of two i1 memrefs gets a widened result.
// CHECK-LABEL: func.func @widens_if_results(
// CHECK:         %[[R:.+]] = scf.if %{{.+}} -> (memref<4xi8>) {
// CHECK:         return %[[R]] : memref<4xi8>
func.func @widens_if_results(%p: i1, %a: memref<4xi1>, %b: memref<4xi1>) -> memref<4xi1> {
  %r = scf.if %p -> memref<4xi1> {
    scf.yield %a : memref<4xi1>
  } else {
    scf.yield %b : memref<4xi1>
  }
  return %r : memref<4xi1>
}

// -----

// vector.store / vector.load on an i1 memref store and load vectors of bytes.
// CHECK-LABEL: func.func @widens_vector_load_store(
// CHECK-SAME:      %[[M:[a-z0-9]+]]: memref<16xi8>, %[[V:[a-z0-9]+]]: vector<4xi1>
// CHECK:         %[[W:.+]] = arith.extui %[[V]] : vector<4xi1> to vector<4xi8>
// CHECK:         vector.store %[[W]], %[[M]][%{{.+}}] : memref<16xi8>, vector<4xi8>
// CHECK:         %[[L:.+]] = vector.load %[[M]][%{{.+}}] : memref<16xi8>, vector<4xi8>
// CHECK:         %[[T:.+]] = arith.trunci %[[L]] : vector<4xi8> to vector<4xi1>
// CHECK:         return %[[T]] : vector<4xi1>
func.func @widens_vector_load_store(%m: memref<16xi1>, %v: vector<4xi1>, %i: index) -> vector<4xi1> {
  vector.store %v, %m[%i] : memref<16xi1>, vector<4xi1>
  %l = vector.load %m[%i] : memref<16xi1>, vector<4xi1>
  return %l : vector<4xi1>
}

// -----

// vector.transfer_write / transfer_read: the vector and the padding value are widened.
// CHECK-LABEL: func.func @widens_vector_transfers(
// CHECK-SAME:      %[[M:[a-z0-9]+]]: memref<16xi8>, %[[V:[a-z0-9]+]]: vector<4xi1>
// CHECK:         %[[W:.+]] = arith.extui %[[V]] : vector<4xi1> to vector<4xi8>
// CHECK:         vector.transfer_write %[[W]], %[[M]][%{{.+}}] {in_bounds = [true]} : vector<4xi8>, memref<16xi8>
// CHECK:         %[[P:.+]] = arith.extui %{{.+}} : i1 to i8
// CHECK:         %[[R:.+]] = vector.transfer_read %[[M]][%{{.+}}], %[[P]] {in_bounds = [true]} : memref<16xi8>, vector<4xi8>
// CHECK:         %[[T:.+]] = arith.trunci %[[R]] : vector<4xi8> to vector<4xi1>
// CHECK:         return %[[T]] : vector<4xi1>
func.func @widens_vector_transfers(%m: memref<16xi1>, %v: vector<4xi1>, %i: index) -> vector<4xi1> {
  %false = arith.constant false
  vector.transfer_write %v, %m[%i] {in_bounds = [true]} : vector<4xi1>, memref<16xi1>
  %r = vector.transfer_read %m[%i], %false {in_bounds = [true]} : memref<16xi1>, vector<4xi1>
  return %r : vector<4xi1>
}

// -----

// Masked load/store: the pass-through and stored vectors are widened, the mask stays i1.
// CHECK-LABEL: func.func @widens_masked_load_store_keeps_mask(
// CHECK-SAME:      %[[M:[a-z0-9]+]]: memref<16xi8>, %[[MASK:[a-z0-9]+]]: vector<4xi1>, %[[PT:[a-z0-9]+]]: vector<4xi1>
// CHECK:         %[[WPT:.+]] = arith.extui %[[PT]] : vector<4xi1> to vector<4xi8>
// CHECK:         %[[L:.+]] = vector.maskedload %[[M]][%{{.+}}], %[[MASK]], %[[WPT]] : memref<16xi8>, vector<4xi1>, vector<4xi8> into vector<4xi8>
// CHECK:         %[[T:.+]] = arith.trunci %[[L]] : vector<4xi8> to vector<4xi1>
// CHECK:         %[[WL:.+]] = arith.extui %[[T]] : vector<4xi1> to vector<4xi8>
// CHECK:         vector.maskedstore %[[M]][%{{.+}}], %[[MASK]], %[[WL]] : memref<16xi8>, vector<4xi1>, vector<4xi8>
func.func @widens_masked_load_store_keeps_mask(%m: memref<16xi1>, %mask: vector<4xi1>, %pt: vector<4xi1>, %i: index) -> vector<4xi1> {
  %l = vector.maskedload %m[%i], %mask, %pt : memref<16xi1>, vector<4xi1>, vector<4xi1> into vector<4xi1>
  vector.maskedstore %m[%i], %mask, %l : memref<16xi1>, vector<4xi1>, vector<4xi1>
  return %l : vector<4xi1>
}

// -----

// Does not fire: a function without i1 memrefs is left as it was.
// CHECK-LABEL: func.func @no_i1_memrefs_unchanged(
// CHECK-SAME:      %[[M:[a-z0-9]+]]: memref<4xf32>
// CHECK:         %[[L:.+]] = memref.load %[[M]][%{{.+}}] : memref<4xf32>
// CHECK-NEXT:    memref.store %[[L]], %[[M]][%{{.+}}] : memref<4xf32>
// CHECK-NOT:     arith.extui
// CHECK-NOT:     arith.trunci
// CHECK:         return
func.func @no_i1_memrefs_unchanged(%m: memref<4xf32>, %i: index, %j: index) {
  %l = memref.load %m[%i] : memref<4xf32>
  memref.store %l, %m[%j] : memref<4xf32>
  return
}

// -----

// Does not fire: i1 scalars, i1 vectors and i1 tensors are not memrefs and stay i1.
// CHECK-LABEL: func.func @i1_scalars_and_tensors_untouched(
// CHECK-SAME:      %[[B:[a-z0-9]+]]: i1, %[[V:[a-z0-9]+]]: vector<4xi1>, %[[T:[a-z0-9]+]]: tensor<4xi1>, %{{.+}}: index) -> (i1, vector<4xi1>, tensor<4xi1>)
// CHECK:         %[[S:.+]] = arith.select %[[B]], %[[B]], %[[B]] : i1
// CHECK:         %[[E:.+]] = tensor.insert %[[S]] into %[[T]][%{{.+}}] : tensor<4xi1>
// CHECK-NOT:     arith.extui
// CHECK-NOT:     i8
// CHECK:         return %[[S]], %[[V]], %[[E]] : i1, vector<4xi1>, tensor<4xi1>
func.func @i1_scalars_and_tensors_untouched(%b: i1, %v: vector<4xi1>, %t: tensor<4xi1>, %i: index) -> (i1, vector<4xi1>, tensor<4xi1>) {
  %s = arith.select %b, %b, %b : i1
  %e = tensor.insert %s into %t[%i] : tensor<4xi1>
  return %s, %v, %e : i1, vector<4xi1>, tensor<4xi1>
}
