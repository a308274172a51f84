// lowerline-gpu-distribute maps every linalg op on buffers to GPU blocks and
// threads: in the block foralls of lowerline-gpu-tile-and-fuse, the matmul's
// operand tiles go to shared memory (address space 3) and everything becomes
// thread foralls; ops outside blocks get a block and a thread forall of their
// own. Host-side ops it cannot place are reported in one error (checked with
// --verify-diagnostics, and their list with a plain run).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-distribute)" \
// RUN:   --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-distribute)" \
// RUN:   --split-input-file 2>&1 | FileCheck %s --check-prefix=ERR

// Input: the bufferized stage before lowerline-gpu-distribute
// (lowerline-gpu-to-tiled, then lowerline-to-bufferized{buffer-reuse=false}).

// matmul + bias + relu, 64x64x64, one block of 16 x 16 threads
// (lowerline.gpu_threads). In each k step both operand tiles are staged in
// shared memory: rows of 4 floats per thread, loaded from global memory as
// vector<4xf32> (16-byte aligned: rows of 64 and 16 floats, k offsets of 16);
// each thread then computes a 4x4 output tile with FMAs on vectors read from
// shared memory. The fill and the epilogue are thread foralls too. The
// block's thread count is recorded for lowerline-gpu-map-to-launch.
// CHECK-LABEL: func.func @matmul_bias_relu(
// CHECK-SAME:      %[[A:[^:]+]]: memref<64x64xf32>, %[[B:[^:]+]]: memref<64x64xf32>, %[[BIAS:[^:]+]]: memref<64xf32>, %[[OUT:[^:]+]]: memref<64x64xf32>)
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 1) {
// CHECK:           scf.forall ({{.+}}) in ({{.+}}) {
// CHECK:             linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : memref<{{.+}}>)
// CHECK:           } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:           scf.for %[[K:[a-z0-9_]+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-DAG:         %[[A_T:.+]] = memref.subview %[[A]][0, %[[K]]] [64, 16] [1, 1]
// CHECK-DAG:         %[[B_T:.+]] = memref.subview %[[B]][%[[K]], 0] [16, 64] [1, 1]
// CHECK:             %[[A_RAW:.+]] = memref.alloc() : memref<4096xi8, 3>
// CHECK:             %[[A_SH:.+]] = memref.view %[[A_RAW]][%{{.+}}][] : memref<4096xi8, 3> to memref<64x16xf32, 3>
// CHECK:             %[[B_RAW:.+]] = memref.alloc() : memref<4096xi8, 3>
// CHECK:             %[[B_SH:.+]] = memref.view %[[B_RAW]][%{{.+}}][] : memref<4096xi8, 3> to memref<16x64xf32, 3>
// A tile: 64 rows of 4 vectors.
// CHECK:             scf.forall (%{{.+}}, %{{.+}}) in (64, 4) {
// CHECK:               %[[SRC:.+]] = memref.subview %[[A_T]][%{{.+}}, %{{.+}}] [1, 4] [1, 1]
// CHECK:               %[[DST:.+]] = memref.subview %[[A_SH]][%{{.+}}, %{{.+}}] [1, 4] [1, 1]
// CHECK:               %[[V:.+]] = vector.load %[[SRC]][%{{.+}}, %{{.+}}] : memref<1x4xf32, strided<[64, 1], offset: ?>>, vector<4xf32>
// CHECK:               vector.store %[[V]], %[[DST]][%{{.+}}, %{{.+}}] : memref<1x4xf32, strided<[16, 1], offset: ?>, 3>, vector<4xf32>
// CHECK:             } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// B tile: 16 rows of 16 vectors.
// CHECK:             scf.forall (%{{.+}}, %{{.+}}) in (16, 16) {
// CHECK:               %[[SRC:.+]] = memref.subview %[[B_T]][%{{.+}}, %{{.+}}] [1, 4] [1, 1]
// CHECK:               %[[DST:.+]] = memref.subview %[[B_SH]][%{{.+}}, %{{.+}}] [1, 4] [1, 1]
// CHECK:               %[[V:.+]] = vector.load %[[SRC]][%{{.+}}, %{{.+}}] : memref<1x4xf32, strided<[64, 1], offset: ?>>, vector<4xf32>
// CHECK:               vector.store %[[V]], %[[DST]][%{{.+}}, %{{.+}}] : memref<1x4xf32, strided<[64, 1], offset: ?>, 3>, vector<4xf32>
// CHECK:             } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// The compute: 16 x 16 threads, each a 4x4 tile accumulated in place in the output.
// CHECK:             scf.forall (%{{.+}}, %{{.+}}) in (16, 16) {
// CHECK:               %[[LHS:.+]] = memref.subview %[[A_SH]][%{{.+}}, 0] [4, 16] [1, 1]
// CHECK:               %[[RHS:.+]] = memref.subview %[[B_SH]][0, %{{.+}}] [16, 4] [1, 1]
// CHECK:               %[[ACC:.+]] = memref.subview %[[OUT]][%{{.+}}, %{{.+}}] [4, 4] [1, 1]
// CHECK:               vector.transfer_read %[[LHS]]{{.+}} : memref<4x16xf32, strided<[16, 1], offset: ?>, 3>, vector<4x16xf32>
// CHECK:               vector.transfer_read %[[RHS]]{{.+}} : memref<16x4xf32, strided<[64, 1], offset: ?>, 3>, vector<16x4xf32>
// CHECK:               vector.transfer_read %[[ACC]]{{.+}} vector<4x4xf32>
// CHECK-NOT:           linalg.matmul
// CHECK:               vector.fma {{.+}} : vector<4xf32>
// CHECK-NOT:           linalg.matmul
// CHECK:               vector.transfer_write %{{.+}}, %[[ACC]]
// CHECK:             } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:             memref.dealloc %[[A_RAW]] : memref<4096xi8, 3>
// CHECK:             memref.dealloc %[[B_RAW]] : memref<4096xi8, 3>
// CHECK:           }
// CHECK:           scf.forall ({{.+}}) in ({{.+}}) {
// CHECK:             memref.subview %[[BIAS]]
// CHECK:             linalg.generic
// CHECK:               arith.addf
// CHECK:               arith.maximumf
// CHECK:           } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:         } {lowerline.gpu_block_threads = 256 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NOT:     lowerline.gpu_threads
// CHECK:         return
#map = affine_map<(d0, d1) -> (d1)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul_bias_relu(%arg0: memref<64x64xf32>, %arg1: memref<64x64xf32>, %arg2: memref<64xf32>, %arg3: memref<64x64xf32>) attributes {lowerline.num_results = 1 : i64} {
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.forall (%arg4, %arg5) in (1, 1) {
    linalg.fill ins(%cst : f32) outs(%arg3 : memref<64x64xf32>)
    scf.for %arg6 = %c0 to %c64 step %c16 {
      %subview = memref.subview %arg0[0, %arg6] [64, 16] [1, 1] : memref<64x64xf32> to memref<64x16xf32, strided<[64, 1], offset: ?>>
      %subview_0 = memref.subview %arg1[%arg6, 0] [16, 64] [1, 1] : memref<64x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
      linalg.matmul ins(%subview, %subview_0 : memref<64x16xf32, strided<[64, 1], offset: ?>>, memref<16x64xf32, strided<[64, 1], offset: ?>>) outs(%arg3 : memref<64x64xf32>)
    }
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg2 : memref<64xf32>) outs(%arg3 : memref<64x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.addf %out, %in : f32
      %1 = arith.maximumf %0, %cst : f32
      linalg.yield %1 : f32
    }
  } {lowerline.gpu_threads = array<i64: 16, 16>, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return
}

// -----

// An epilogue that changes the element type (f32 -> f16) cannot update the
// accumulator in place: the block allocates its accumulator tile, which its
// threads share, so it moves to workgroup memory too.
// CHECK-LABEL: func.func @block_local_accumulator(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (2, 1) {
// CHECK:           %[[ACC:.+]] = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32, 3>
// CHECK:           scf.forall
// CHECK:             memref.subview %[[ACC]]
// CHECK:             linalg.fill {{.+}} outs(%{{.+}} : memref<{{.+}}, 3>)
// CHECK:           } {mapping = [#gpu.thread
// CHECK:           scf.for
// CHECK-COUNT-2:     memref.alloc() : memref<4096xi8, 3>
// CHECK:             scf.forall (%{{.+}}, %{{.+}}) in (16, 16) {
// CHECK:               memref.subview %[[ACC]][%{{.+}}, %{{.+}}] [4, 4] [1, 1] : memref<64x64xf32, 3> to memref<4x4xf32, strided<[64, 1], offset: ?>, 3>
// CHECK:               vector.fma
// CHECK:           scf.forall
// CHECK:             memref.subview %[[ACC]]
// CHECK:             linalg.generic
// CHECK:               arith.truncf
// CHECK:           } {mapping = [#gpu.thread
// CHECK:           memref.dealloc %[[ACC]] : memref<64x64xf32, 3>
// CHECK:         } {lowerline.gpu_block_threads = 256 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
#map = affine_map<(d0) -> (d0 * 64)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
func.func @block_local_accumulator(%arg0: memref<128x32xf32>, %arg1: memref<32x64xf32>, %arg2: memref<128x64xf16>) attributes {lowerline.num_results = 1 : i64} {
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.forall (%arg3, %arg4) in (2, 1) {
    %0 = affine.apply #map(%arg3)
    %subview = memref.subview %arg0[%0, 0] [64, 32] [1, 1] : memref<128x32xf32> to memref<64x32xf32, strided<[32, 1], offset: ?>>
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
    linalg.fill ins(%cst : f32) outs(%alloc : memref<64x64xf32>)
    scf.for %arg5 = %c0 to %c32 step %c16 {
      %subview_1 = memref.subview %subview[0, %arg5] [64, 16] [1, 1] : memref<64x32xf32, strided<[32, 1], offset: ?>> to memref<64x16xf32, strided<[32, 1], offset: ?>>
      %subview_2 = memref.subview %arg1[%arg5, 0] [16, 64] [1, 1] : memref<32x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
      linalg.matmul ins(%subview_1, %subview_2 : memref<64x16xf32, strided<[32, 1], offset: ?>>, memref<16x64xf32, strided<[64, 1], offset: ?>>) outs(%alloc : memref<64x64xf32>)
    }
    %subview_0 = memref.subview %arg2[%0, 0] [64, 64] [1, 1] : memref<128x64xf16> to memref<64x64xf16, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%alloc : memref<64x64xf32>) outs(%subview_0 : memref<64x64xf16, strided<[64, 1], offset: ?>>) {
    ^bb0(%in: f32, %out: f16):
      %1 = arith.truncf %in : f32 to f16
      linalg.yield %1 : f16
    }
    memref.dealloc %alloc : memref<64x64xf32>
  } {lowerline.gpu_threads = array<i64: 16, 16>, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return
}

// -----

// Not vectorized: B's rows are 18 floats long, so no row of its tile starts
// on a 16-byte boundary; its copy into shared memory is spread over the
// threads one column each, with no vector<4xf32>. A's rows (32 floats) still
// move 4 floats at a time. The 4 x 5 compute tiles are partial at the right
// edge (dynamic sizes) and stay a linalg.matmul.
// CHECK-LABEL: func.func @row_not_multiple_of_4(
// CHECK:         %[[A_SH:.+]] = memref.view %{{.+}} to memref<32x16xf32, 3>
// CHECK:         %[[B_SH:.+]] = memref.view %{{.+}} to memref<16x18xf32, 3>
// CHECK:         scf.forall
// CHECK:           memref.subview %[[A_SH]]{{.+}} [4, 4] [1, 1]
// CHECK:           vector.transfer_read {{.+}} vector<4x4xf32>
// CHECK:         } {mapping = [#gpu.thread
// CHECK:         scf.forall
// CHECK-NOT:       x4xf32>
// CHECK:           memref.subview %[[B_SH]]{{.+}} [16, 1] [1, 1]
// CHECK-NOT:       x4xf32>
// CHECK:           vector.transfer_read {{.+}} : memref<16x1xf32, strided<[18, 1], offset: ?>>, vector<16x1xf32>
// CHECK-NOT:       x4xf32>
// CHECK:         } {mapping = [#gpu.thread
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (8, 4) {
// CHECK:           linalg.matmul ins(%{{.+}}, %{{.+}} : memref<4x16xf32, strided<[16, 1], offset: ?>, 3>, memref<16x?xf32, strided<[18, 1], offset: ?>, 3>)
// CHECK:         } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:       } {lowerline.gpu_block_threads = 32 : i64
func.func @row_not_multiple_of_4(%arg0: memref<32x32xf32>, %arg1: memref<32x18xf32>, %arg2: memref<32x18xf32>) attributes {lowerline.num_results = 1 : i64} {
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  scf.forall (%arg3, %arg4) in (1, 1) {
    linalg.fill ins(%cst : f32) outs(%arg2 : memref<32x18xf32>)
    scf.for %arg5 = %c0 to %c32 step %c16 {
      %subview = memref.subview %arg0[0, %arg5] [32, 16] [1, 1] : memref<32x32xf32> to memref<32x16xf32, strided<[32, 1], offset: ?>>
      %subview_0 = memref.subview %arg1[%arg5, 0] [16, 18] [1, 1] : memref<32x18xf32> to memref<16x18xf32, strided<[18, 1], offset: ?>>
      linalg.matmul ins(%subview, %subview_0 : memref<32x16xf32, strided<[32, 1], offset: ?>>, memref<16x18xf32, strided<[18, 1], offset: ?>>) outs(%arg2 : memref<32x18xf32>)
    }
  } {lowerline.gpu_threads = array<i64: 8, 4>, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return
}

// -----

// Not vectorized: A's rows are 36 floats (a multiple of 4) but its view
// starts 2 floats in, so no vector access of it is provably aligned; B's
// copy (aligned) still reads rows of 4.
// CHECK-LABEL: func.func @misaligned_offset(
// CHECK:         %[[A_SH:.+]] = memref.view %{{.+}} to memref<32x16xf32, 3>
// CHECK:         %[[B_SH:.+]] = memref.view %{{.+}} to memref<16x32xf32, 3>
// CHECK:         scf.forall
// CHECK-NOT:       x4xf32>
// CHECK:           memref.subview %[[A_SH]]{{.+}} [{{[0-9]+}}, 1] [1, 1]
// CHECK-NOT:       x4xf32>
// CHECK:           vector.transfer_read {{.+}} : memref<{{[0-9]+}}x1xf32, strided<[36, 1], offset: ?>>, vector<{{[0-9]+}}x1xf32>
// CHECK-NOT:       x4xf32>
// CHECK:         } {mapping = [#gpu.thread
// CHECK:         scf.forall
// CHECK:           memref.subview %[[B_SH]]{{.+}} [{{[0-9]+}}, 4] [1, 1]
// CHECK:           vector.transfer_read {{.+}} : memref<{{[0-9]+}}x4xf32, strided<[32, 1], offset: ?>>, vector<{{[0-9]+}}x4xf32>
// CHECK:         } {mapping = [#gpu.thread
func.func @misaligned_offset(%a: memref<32x36xf32>, %b: memref<32x32xf32>, %out: memref<32x32xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %cst = arith.constant 0.0 : f32
  %a2 = memref.subview %a[0, 2] [32, 32] [1, 1] : memref<32x36xf32> to memref<32x32xf32, strided<[36, 1], offset: 2>>
  scf.forall (%i, %j) in (1, 1) {
    linalg.fill ins(%cst : f32) outs(%out : memref<32x32xf32>)
    scf.for %k = %c0 to %c32 step %c16 {
      %at = memref.subview %a2[0, %k] [32, 16] [1, 1] : memref<32x32xf32, strided<[36, 1], offset: 2>> to memref<32x16xf32, strided<[36, 1], offset: ?>>
      %bt = memref.subview %b[%k, 0] [16, 32] [1, 1] : memref<32x32xf32> to memref<16x32xf32, strided<[32, 1], offset: ?>>
      linalg.matmul ins(%at, %bt : memref<32x16xf32, strided<[36, 1], offset: ?>>, memref<16x32xf32, strided<[32, 1], offset: ?>>) outs(%out : memref<32x32xf32>)
    }
  } {lowerline.gpu_threads = array<i64: 8, 8>, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return
}

// -----

// Ops outside groups (a transpose, an elementwise op): each gets a block
// forall of up to 256 points and, inside it, a thread forall of one point
// per thread.
// CHECK-LABEL: func.func @outside_groups(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4x8xf32>, %[[Y:[^:]+]]: memref<8x4xf32>, %[[OUT:[^:]+]]: memref<8x4xf32>)
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 1) {
// CHECK:           scf.forall (%{{.+}}, %{{.+}}) in (8, 4) {
// CHECK:             linalg.transpose ins(%{{.+}} : memref<1x1xf32, {{.+}}>) outs(%{{.+}} : memref<1x1xf32, {{.+}}>)
// CHECK:           } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:         } {lowerline.gpu_block_threads = 32 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 1) {
// CHECK:           scf.forall (%{{.+}}, %{{.+}}) in (8, 4) {
// CHECK:             linalg.generic {{.+}} outs(%{{.+}} : memref<1x1xf32, {{.+}}>)
// CHECK:               arith.mulf
// CHECK:           } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:         } {lowerline.gpu_block_threads = 32 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NEXT:    return
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @outside_groups(%arg0: memref<4x8xf32>, %arg1: memref<8x4xf32>, %arg2: memref<8x4xf32>) attributes {lowerline.num_results = 1 : i64} {
  linalg.transpose ins(%arg0 : memref<4x8xf32>) outs(%arg2 : memref<8x4xf32>) permutation = [1, 0]
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg2, %arg1 : memref<8x4xf32>, memref<8x4xf32>) outs(%arg2 : memref<8x4xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.mulf %in, %in_0 : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A row reduction: 300 rows in blocks of 256 (the last one partial), one row
// per thread; the reduction dim stays a loop inside the thread's op.
// CHECK-LABEL: func.func @row_reduction(
// CHECK:         scf.forall (%{{.+}}) in (2) {
// CHECK:           scf.forall (%{{.+}}) in (256) {
// CHECK:             linalg.fill
// CHECK:           } {mapping = [#gpu.thread<linear_dim_0>]}
// CHECK:         } {lowerline.gpu_block_threads = 256 : i64, mapping = [#gpu.block<linear_dim_0>]}
// CHECK:         scf.forall (%{{.+}}) in (2) {
// CHECK:           scf.forall (%{{.+}}) in (256) {
// CHECK:             linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%{{.+}} : memref<?x8xf32, {{.+}}>) outs(%{{.+}} : memref<?xf32, {{.+}}>)
// CHECK:           } {mapping = [#gpu.thread<linear_dim_0>]}
// CHECK:         } {lowerline.gpu_block_threads = 256 : i64, mapping = [#gpu.block<linear_dim_0>]}
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @row_reduction(%arg0: memref<300x8xf32>, %arg1: memref<300xf32>) attributes {lowerline.num_results = 1 : i64} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%arg1 : memref<300xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<300x8xf32>) outs(%arg1 : memref<300xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A full reduction to a scalar (and the fill of that scalar) has no parallel
// loop: each runs in one block of one thread.
// CHECK-LABEL: func.func @full_reduction(
// CHECK-SAME:      %[[X:[^:]+]]: memref<16x8xf32>, %[[OUT:[^:]+]]: memref<f32>)
// CHECK:         scf.forall (%{{.+}}) in (1) {
// CHECK-NEXT:      scf.forall (%{{.+}}) in (1) {
// CHECK-NEXT:        linalg.fill ins(%{{.+}} : f32) outs(%[[OUT]] : memref<f32>)
// CHECK-NEXT:      } {mapping = [#gpu.thread<linear_dim_0>]}
// CHECK-NEXT:    } {lowerline.gpu_block_threads = 1 : i64, mapping = [#gpu.block<linear_dim_0>]}
// CHECK-NEXT:    scf.forall (%{{.+}}) in (1) {
// CHECK-NEXT:      scf.forall (%{{.+}}) in (1) {
// CHECK-NEXT:        linalg.generic {{.+}} iterator_types = ["reduction", "reduction"]} ins(%[[X]] : memref<16x8xf32>) outs(%[[OUT]] : memref<f32>)
// CHECK:           } {mapping = [#gpu.thread<linear_dim_0>]}
// CHECK-NEXT:    } {lowerline.gpu_block_threads = 1 : i64, mapping = [#gpu.block<linear_dim_0>]}
// CHECK-NEXT:    return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
func.func @full_reduction(%arg0: memref<16x8xf32>, %arg1: memref<f32>) attributes {lowerline.num_results = 1 : i64} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%arg1 : memref<f32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%arg0 : memref<16x8xf32>) outs(%arg1 : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// memref.copy (bufferization's copies of returned arguments) becomes a
// linalg.copy and is mapped like any other op; a self-copy is dropped.
// CHECK-LABEL: func.func @copies(
// CHECK-SAME:      %[[X:[^:]+]]: memref<8x8xf32>, %[[OUT:[^:]+]]: memref<8x8xf32>)
// CHECK-NOT:     memref.copy
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 1) {
// CHECK-DAG:       %[[SRC:.+]] = memref.subview %[[X]]
// CHECK-DAG:       %[[DST:.+]] = memref.subview %[[OUT]]
// CHECK:           scf.forall (%{{.+}}, %{{.+}}) in (8, 8) {
// CHECK:             %[[S:.+]] = memref.subview %[[SRC]]
// CHECK:             %[[D:.+]] = memref.subview %[[DST]]
// CHECK:             linalg.copy {{.*}}ins(%[[S]] : memref<1x1xf32, {{.+}}>) outs(%[[D]] : memref<1x1xf32, {{.+}}>)
// CHECK:           } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
// CHECK:         } {lowerline.gpu_block_threads = 64 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
// CHECK-NOT:     memref.copy
// CHECK-NOT:     linalg.copy
// CHECK:         return
func.func @copies(%arg0: memref<8x8xf32>, %arg1: memref<8x8xf32>) attributes {lowerline.num_results = 1 : i64} {
  memref.copy %arg0, %arg1 : memref<8x8xf32> to memref<8x8xf32>
  memref.copy %arg1, %arg1 : memref<8x8xf32> to memref<8x8xf32>
  return
}

// -----

// Not fired: a function with no linalg op, only host-side views, is left as
// it is.
// CHECK-LABEL: func.func @nothing_to_map(
// CHECK-SAME:      %[[A:[^:]+]]: memref<4x8xf32>) -> memref<32xf32> {
// CHECK-NEXT:    %[[C:.+]] = memref.collapse_shape %[[A]] {{\[}}[0, 1]] : memref<4x8xf32> into memref<32xf32>
// CHECK-NEXT:    return %[[C]] : memref<32xf32>
func.func @nothing_to_map(%a: memref<4x8xf32>) -> memref<32xf32> {
  %c = memref.collapse_shape %a [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  return %c : memref<32xf32>
}

// -----

// Error: host-side ops that would touch device memory (a scalar load and
// store) and an op of dynamic shape are all reported, in one error.
// ERR:      error: cannot map to GPU blocks and threads:
// ERR-NEXT:   linalg.fill at "{{.+}}lowerline-gpu-distribute.mlir":[[@LINE+12]]:{{[0-9]+}}: dynamic shapes are not mapped to the GPU
// ERR-NEXT:   memref.load at loc("{{.+}}lowerline-gpu-distribute.mlir":[[@LINE+8]]:{{[0-9]+}}): runs on the host on device memory
// ERR-NEXT:   memref.store at loc("{{.+}}lowerline-gpu-distribute.mlir":[[@LINE+9]]:{{[0-9]+}}): runs on the host on device memory
// CHECK-NOT: func.func @host_side_ops

// expected-error @below {{cannot map to GPU blocks and threads:}}
module {
  func.func @host_side_ops(%a: memref<16xf32>, %out: memref<16xf32>, %dyn: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %v = memref.load %a[%c0] : memref<16xf32>
    linalg.fill ins(%v : f32) outs(%out : memref<16xf32>)
    memref.store %v, %out[%c0] : memref<16xf32>
    linalg.fill ins(%v : f32) outs(%dyn : memref<?xf32>)
    return
  }
}
