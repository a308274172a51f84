// The GPU bufferized stage (lowerline-gpu-to-bufferized): one-shot
// bufferization with results as out-params (a buffer per value, freed at the
// end), then every linalg op mapped to blocks and threads with the matmul
// operands staged in shared memory (lowerline-gpu-distribute): the mapped IR.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-bufferized)" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-bufferized)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE

// Nothing of the tensor world is left, no host copy, no planning attribute.
// NONE-NOT: tensor
// NONE-NOT: bufferization.
// NONE-NOT: memref.copy
// NONE-NOT: lowerline.gpu_threads

// Input: the tiled stage's output (lowerline-gpu-to-tiled).

// matmul + bias + relu, 64x64x64: the result becomes the out-param the block
// writes in place; inside the block, the fill, the k loop (operand tiles
// copied to shared memory as vector<4xf32> rows, then 16 x 16 threads of 4x4
// FMA tiles) and the epilogue, all thread foralls.
// CHECK-LABEL: func.func @matmul_bias_relu(
// CHECK-SAME:      %[[A:[^:]+]]: memref<64x64xf32>, %[[B:[^:]+]]: memref<64x64xf32>, %[[BIAS:[^:]+]]: memref<64xf32>, %[[OUT:[^:]+]]: memref<64x64xf32>)
// CHECK-SAME:      attributes {lowerline.num_results = 1 : i64} {
// CHECK-NOT:     memref.alloc
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 1) {
// CHECK:           scf.forall
// CHECK:             linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : memref<{{.+}}>)
// CHECK:           } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:           scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-DAG:         %[[A_T:.+]] = memref.subview %[[A]][0, %[[K]]] [64, 16] [1, 1]
// CHECK-DAG:         %[[B_T:.+]] = memref.subview %[[B]][%[[K]], 0] [16, 64] [1, 1]
// CHECK-DAG:         %[[A_SH:.+]] = memref.view %{{.+}} : memref<4096xi8, 3> to memref<64x16xf32, 3>
// CHECK-DAG:         %[[B_SH:.+]] = memref.view %{{.+}} : memref<4096xi8, 3> to memref<16x64xf32, 3>
// CHECK:             scf.forall (%{{.+}}, %{{.+}}) in (64, 4) {
// CHECK:               %[[SRC:.+]] = memref.subview %[[A_T]]
// CHECK:               %[[DST:.+]] = memref.subview %[[A_SH]]
// CHECK:               %[[V:.+]] = vector.load %[[SRC]][%{{.+}}, %{{.+}}] : memref<1x4xf32, {{.+}}>, vector<4xf32>
// CHECK:               vector.store %[[V]], %[[DST]][%{{.+}}, %{{.+}}] : memref<1x4xf32, {{.+}}, 3>, vector<4xf32>
// CHECK:             } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:             scf.forall (%{{.+}}, %{{.+}}) in (16, 16) {
// CHECK:               %[[SRC:.+]] = memref.subview %[[B_T]]
// CHECK:               %[[DST:.+]] = memref.subview %[[B_SH]]
// CHECK:               %[[V:.+]] = vector.load %[[SRC]][%{{.+}}, %{{.+}}] : memref<1x4xf32, {{.+}}>, vector<4xf32>
// CHECK:               vector.store %[[V]], %[[DST]][%{{.+}}, %{{.+}}] : memref<1x4xf32, {{.+}}, 3>, vector<4xf32>
// CHECK:             } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:             scf.forall (%{{.+}}, %{{.+}}) in (16, 16) {
// CHECK:               memref.subview %[[A_SH]][%{{.+}}, 0] [4, 16] [1, 1]
// CHECK:               memref.subview %[[B_SH]][0, %{{.+}}] [16, 4] [1, 1]
// CHECK:               %[[ACC:.+]] = memref.subview %[[OUT]][%{{.+}}, %{{.+}}] [4, 4] [1, 1]
// CHECK:               vector.fma
// CHECK:               vector.transfer_write %{{.+}}, %[[ACC]]
// CHECK:             } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:           }
// CHECK:           scf.forall
// CHECK:             memref.subview %[[BIAS]]
// CHECK:             linalg.generic
// CHECK:               arith.addf
// CHECK:               arith.maximumf
// CHECK:           } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:         } {lowerline.gpu_block_threads = 256 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NEXT:    return{{$}}
#map = affine_map<(d0, d1) -> (d1)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul_bias_relu(%arg0: tensor<64x64xf32>, %arg1: tensor<64x64xf32>, %arg2: tensor<64xf32>) -> tensor<64x64xf32> attributes {lowerline.num_results = 1 : i64} {
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<64x64xf32>
  %1 = scf.forall (%arg3, %arg4) in (1, 1) shared_outs(%arg5 = %0) -> (tensor<64x64xf32>) {
    %2 = linalg.fill ins(%cst : f32) outs(%arg5 : tensor<64x64xf32>) -> tensor<64x64xf32>
    %3 = scf.for %arg6 = %c0 to %c64 step %c16 iter_args(%arg7 = %2) -> (tensor<64x64xf32>) {
      %extracted_slice = tensor.extract_slice %arg0[0, %arg6] [64, 16] [1, 1] : tensor<64x64xf32> to tensor<64x16xf32>
      %extracted_slice_0 = tensor.extract_slice %arg1[%arg6, 0] [16, 64] [1, 1] : tensor<64x64xf32> to tensor<16x64xf32>
      %5 = linalg.matmul ins(%extracted_slice, %extracted_slice_0 : tensor<64x16xf32>, tensor<16x64xf32>) outs(%arg7 : tensor<64x64xf32>) -> tensor<64x64xf32>
      scf.yield %5 : tensor<64x64xf32>
    }
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg2 : tensor<64xf32>) outs(%3 : tensor<64x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %5 = arith.addf %out, %in : f32
      %6 = arith.maximumf %5, %cst : f32
      linalg.yield %6 : f32
    } -> tensor<64x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %4 into %arg5[0, 0] [64, 64] [1, 1] : tensor<64x64xf32> into tensor<64x64xf32>
    }
  } {lowerline.gpu_threads = array<i64: 16, 16>, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return %1 : tensor<64x64xf32>
}

// -----

// Outside groups: the elementwise op and the copy of the returned argument
// (memref.copy after bufferization) each run in a block of 8 x 32 threads,
// one element per thread, into their out-params.
// CHECK-LABEL: func.func @scale_and_copy(
// CHECK-SAME:      %[[X:[^:]+]]: memref<8x32xf32>, %[[R0:[^:]+]]: memref<8x32xf32>, %[[R1:[^:]+]]: memref<8x32xf32>)
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 1) {
// CHECK:           scf.forall (%{{.+}}, %{{.+}}) in (8, 32) {
// CHECK-DAG:         %[[S:.+]] = memref.subview %[[X]]
// CHECK-DAG:         %[[D:.+]] = memref.subview %[[R0]]
// CHECK:             linalg.generic {{.+}} ins(%[[S]] : memref<1x1xf32, {{.+}}>) outs(%[[D]] : memref<1x1xf32, {{.+}}>)
// CHECK:               arith.mulf
// CHECK:           } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:         } {lowerline.gpu_block_threads = 256 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 1) {
// CHECK:           scf.forall (%{{.+}}, %{{.+}}) in (8, 32) {
// CHECK-DAG:         %[[S:.+]] = memref.subview %[[X]]
// CHECK-DAG:         %[[D:.+]] = memref.subview %[[R1]]
// CHECK:             linalg.copy {{.*}}ins(%[[S]] : memref<1x1xf32, {{.+}}>) outs(%[[D]] : memref<1x1xf32, {{.+}}>)
// CHECK:           } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:         } {lowerline.gpu_block_threads = 256 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NEXT:    return{{$}}
func.func @scale_and_copy(%x: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) attributes {lowerline.num_results = 2 : i64} {
  %two = arith.constant 2.000000e+00 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  return %r, %x : tensor<8x32xf32>, tensor<8x32xf32>
}
