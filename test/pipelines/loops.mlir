// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-loops)" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-loops)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE

// No linalg op survives.
// NONE-NOT: linalg.

// Input: the bufferized stage's output (lowerline-to-bufferized).

// fill, matmul and the epilogue become three scf.for nests over the
// out-param: 2-deep, 3-deep (with the reduction innermost), 2-deep.
// CHECK-LABEL: func.func @matmul_bias_relu(
// CHECK-SAME:      %[[A:[^:]+]]: memref<16x32xf32>, %[[B:[^:]+]]: memref<32x8xf32>,
// CHECK-SAME:      %[[BIAS:[^:]+]]: memref<8xf32>, %[[OUT:[^:]+]]: memref<16x8xf32>) {
// CHECK-DAG:     %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:     %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG:     %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG:     %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// fill
// CHECK:         scf.for %[[I:.+]] = %[[C0]] to %[[C16]] step %[[C1]] {
// CHECK-NEXT:      scf.for %[[J:.+]] = %[[C0]] to %[[C8]] step %[[C1]] {
// CHECK-NEXT:        memref.store %[[ZERO]], %[[OUT]][%[[I]], %[[J]]]
// matmul
// CHECK:         scf.for %[[I:.+]] = %[[C0]] to %[[C16]] step %[[C1]] {
// CHECK-NEXT:      scf.for %[[J:.+]] = %[[C0]] to %[[C8]] step %[[C1]] {
// CHECK-NEXT:        scf.for %[[K:.+]] = %[[C0]] to %[[C32]] step %[[C1]] {
// CHECK-DAG:           memref.load %[[A]][%[[I]], %[[K]]]
// CHECK-DAG:           memref.load %[[B]][%[[K]], %[[J]]]
// CHECK-DAG:           memref.load %[[OUT]][%[[I]], %[[J]]]
// CHECK:               arith.mulf
// CHECK:               %[[ACC:.+]] = arith.addf
// CHECK:               memref.store %[[ACC]], %[[OUT]][%[[I]], %[[J]]]
// epilogue
// CHECK:         scf.for %[[I:.+]] = %[[C0]] to %[[C16]] step %[[C1]] {
// CHECK-NEXT:      scf.for %[[J:.+]] = %[[C0]] to %[[C8]] step %[[C1]] {
// CHECK-DAG:         %[[V:.+]] = memref.load %[[OUT]][%[[I]], %[[J]]]
// CHECK-DAG:         %[[BV:.+]] = memref.load %[[BIAS]][%[[J]]]
// CHECK:             %[[SUM:.+]] = arith.addf %[[V]], %[[BV]]
// CHECK:             %[[RELU:.+]] = arith.maximumf %[[SUM]], %[[ZERO]]
// CHECK:             memref.store %[[RELU]], %[[OUT]][%[[I]], %[[J]]]
// CHECK-NOT:     scf.for
// CHECK:         return
func.func @matmul_bias_relu(%arg0: memref<16x32xf32>, %arg1: memref<32x8xf32>, %arg2: memref<8xf32>, %arg3: memref<16x8xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%arg3 : memref<16x8xf32>)
  linalg.matmul ins(%arg0, %arg1 : memref<16x32xf32>, memref<32x8xf32>) outs(%arg3 : memref<16x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg3, %arg2 : memref<16x8xf32>, memref<8xf32>) outs(%arg3 : memref<16x8xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.addf %in, %in_0 : f32
    %1 = arith.maximumf %0, %cst : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// One 7x13 nest; the math ops stay scalar math ops for the llvm stage.
// CHECK-LABEL: func.func @elementwise(
// CHECK-SAME:      %[[X:[^:]+]]: memref<7x13xf32>, %[[Y:[^:]+]]: memref<7x13xf32>, %[[OUT:[^:]+]]: memref<7x13xf32>) {
// CHECK-DAG:     %[[C7:.+]] = arith.constant 7 : index
// CHECK-DAG:     %[[C13:.+]] = arith.constant 13 : index
// CHECK:         scf.for %[[I:.+]] = %{{.+}} to %[[C7]]
// CHECK-NEXT:      scf.for %[[J:.+]] = %{{.+}} to %[[C13]]
// CHECK-DAG:         %[[VX:.+]] = memref.load %[[X]][%[[I]], %[[J]]]
// CHECK-DAG:         %[[VY:.+]] = memref.load %[[Y]][%[[I]], %[[J]]]
// CHECK-DAG:         %[[T:.+]] = math.tanh %[[VY]] : f32
// CHECK-DAG:         %[[E:.+]] = math.exp %[[VX]] : f32
// CHECK:             %[[M:.+]] = arith.mulf %[[E]], %[[T]]
// CHECK:             %[[C:.+]] = arith.cmpf ogt, %[[M]], %[[VX]]
// CHECK:             %[[S:.+]] = arith.select %[[C]], %[[M]], %[[VX]]
// CHECK:             memref.store %[[S]], %[[OUT]][%[[I]], %[[J]]]
// CHECK-NOT:     scf.for
// CHECK:         return
func.func @elementwise(%arg0: memref<7x13xf32>, %arg1: memref<7x13xf32>, %arg2: memref<7x13xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : memref<7x13xf32>, memref<7x13xf32>) outs(%arg2 : memref<7x13xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = math.tanh %in_0 : f32
    %1 = math.exp %in : f32
    %2 = arith.mulf %1, %0 : f32
    %3 = arith.cmpf ogt, %2, %in : f32
    %4 = arith.select %3, %2, %in : f32
    linalg.yield %4 : f32
  }
  return
}

// -----

// The comparison is stored straight into the i1 memref (widened later).
// CHECK-LABEL: func.func @compare_to_mask(
// CHECK-SAME:      %[[OUT:[^:]+]]: memref<7x13xi1>) {
// CHECK:         scf.for %[[I:.+]] =
// CHECK-NEXT:      scf.for %[[J:.+]] =
// CHECK:             %[[C:.+]] = arith.cmpf olt
// CHECK:             memref.store %[[C]], %[[OUT]][%[[I]], %[[J]]] : memref<7x13xi1>
func.func @compare_to_mask(%arg0: memref<7x13xf32>, %arg1: memref<7x13xf32>, %arg2: memref<7x13xi1>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : memref<7x13xf32>, memref<7x13xf32>) outs(%arg2 : memref<7x13xi1>) {
  ^bb0(%in: f32, %in_0: f32, %out: i1):
    %0 = arith.cmpf olt, %in, %in_0 : f32
    linalg.yield %0 : i1
  }
  return
}
