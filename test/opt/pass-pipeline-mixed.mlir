// RUN: lowerline-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(canonicalize,lowerline-widen-i1-memrefs,cse))" \
// RUN:   | FileCheck %s --check-prefix=NESTED
// RUN: lowerline-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(func.func(canonicalize),lowerline-widen-i1-memrefs,cse)" \
// RUN:   | FileCheck %s --check-prefix=TOP

// canonicalize folds the add, then lowerline-widen-i1-memrefs widens, then cse merges the widened loads.
// NESTED-LABEL: func.func @upstream_and_lowerline_passes_compose(
// NESTED-SAME:      %[[X:[a-z0-9]+]]: i32, %[[B:[a-z0-9]+]]: i1, %[[I:[a-z0-9]+]]: index) -> (i32, i1)
// NESTED-NOT:     arith.addi
// NESTED:         %[[M:.+]] = memref.alloca() : memref<4xi8>
// NESTED:         %[[W:.+]] = arith.extui %[[B]] : i1 to i8
// NESTED:         memref.store %[[W]], %[[M]][%[[I]]] : memref<4xi8>
// NESTED:         %[[L:.+]] = memref.load %[[M]][%[[I]]] : memref<4xi8>
// NESTED:         %[[T:.+]] = arith.trunci %[[L]] : i8 to i1
// NESTED-NOT:     memref.load
// NESTED-NOT:     arith.trunci
// NESTED:         %[[A:.+]] = arith.andi %[[T]], %[[T]] : i1
// NESTED:         return %[[X]], %[[A]] : i32, i1
// TOP-LABEL:    func.func @upstream_and_lowerline_passes_compose(
// TOP-NOT:        arith.addi
// TOP:            memref.alloca() : memref<4xi8>
// TOP:            arith.extui
// TOP:            memref.load
// TOP:            arith.trunci
// TOP-NOT:        memref.load
// TOP:            return
func.func @upstream_and_lowerline_passes_compose(%x: i32, %b: i1, %i: index) -> (i32, i1) {
  %c0 = arith.constant 0 : i32
  %sum = arith.addi %x, %c0 : i32
  %m = memref.alloca() : memref<4xi1>
  memref.store %b, %m[%i] : memref<4xi1>
  %v0 = memref.load %m[%i] : memref<4xi1>
  %v1 = memref.load %m[%i] : memref<4xi1>
  %both = arith.andi %v0, %v1 : i1
  return %sum, %both : i32, i1
}

// -----

// The nested pipeline runs on every function of the module.
// NESTED-LABEL: func.func @first_function(
// NESTED:         memref.load %{{.+}}[%{{.+}}] : memref<2xi8>
// NESTED-LABEL: func.func @second_function(
// NESTED:         memref.load %{{.+}}[%{{.+}}] : memref<3xi8>
// TOP-LABEL:    func.func @first_function(
// TOP:            memref.load %{{.+}}[%{{.+}}] : memref<2xi8>
// TOP-LABEL:    func.func @second_function(
// TOP:            memref.load %{{.+}}[%{{.+}}] : memref<3xi8>
func.func @first_function(%i: index) -> i1 {
  %m = memref.alloca() : memref<2xi1>
  %v = memref.load %m[%i] : memref<2xi1>
  return %v : i1
}
func.func @second_function(%i: index) -> i1 {
  %m = memref.alloca() : memref<3xi1>
  %v = memref.load %m[%i] : memref<3xi1>
  return %v : i1
}
