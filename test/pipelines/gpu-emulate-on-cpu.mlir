// lowerline-gpu-emulate-on-cpu: the mapped IR of the GPU bufferized stage
// lowered for the CPU (shared memory made host memory, foralls run in order
// on one thread, then the CPU loops and llvm stages), the only numeric check
// of GPU code on machines without a GPU.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-emulate-on-cpu)" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-emulate-on-cpu)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE

// Only the LLVM dialect is left, with no GPU memory space and no GPU op.
// NONE-NOT: , 3>
// NONE-NOT: address_space
// NONE-NOT: !llvm.ptr<
// NONE-NOT: gpu.
// NONE-NOT: func.func
// NONE-NOT: linalg.
// NONE-NOT: scf.
// NONE-NOT: memref.
// NONE-NOT: vector.
// NONE-NOT: arith.
// NONE-NOT: omp.
// NONE-NOT: unrealized_conversion_cast

// Input: the bufferized stage's output (lowerline-gpu-to-bufferized),
// simplified as in gpu-loops.mlir.

// The two shared tiles become heap buffers (allocated, then freed); the
// copies into them keep their 4-float vector loads and stores; the tile
// product and the relu are scalar code.
// CHECK-LABEL: llvm.func @matmul_relu(
// CHECK-SAME:      attributes {llvm.emit_c_interface, lowerline.num_results = 1 : i64} {
// CHECK:         %[[SA:.+]] = llvm.call @_mlir_memref_to_llvm_alloc(%{{.+}}) : (i64) -> !llvm.ptr
// CHECK:         %[[SB:.+]] = llvm.call @_mlir_memref_to_llvm_alloc(%{{.+}}) : (i64) -> !llvm.ptr
// CHECK:         %[[V:.+]] = llvm.load %{{.+}} : !llvm.ptr -> vector<4xf32>
// CHECK:         llvm.store %[[V]], %{{.+}} : vector<4xf32>, !llvm.ptr
// CHECK:         %[[V:.+]] = llvm.load %{{.+}} : !llvm.ptr -> vector<4xf32>
// CHECK:         llvm.store %[[V]], %{{.+}} : vector<4xf32>, !llvm.ptr
// CHECK:         llvm.fmul
// CHECK:         llvm.fadd
// CHECK:         llvm.call @_mlir_memref_to_llvm_free(%[[SA]])
// CHECK:         llvm.call @_mlir_memref_to_llvm_free(%[[SB]])
// CHECK:         llvm.intr.maximum
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_matmul_relu(
// CHECK:         llvm.call @matmul_relu(
#rows16 = affine_map<(d0) -> (d0 * 16)>
#by4 = affine_map<(d0) -> (d0 * 4)>
func.func @matmul_relu(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %out: memref<64x64xf32>) attributes {lowerline.num_results = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.000000e+00 : f32
  scf.forall (%bi, %bj) in (1, 1) {
    scf.forall (%i, %j) in (4, 64) {
      %r = affine.apply #rows16(%i)
      %o = memref.subview %out[%r, %j] [16, 1] [1, 1] : memref<64x64xf32> to memref<16x1xf32, strided<[64, 1], offset: ?>>
      linalg.fill ins(%zero : f32) outs(%o : memref<16x1xf32, strided<[64, 1], offset: ?>>)
    } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
    scf.for %k = %c0 to %c64 step %c16 {
      %at = memref.subview %a[0, %k] [64, 16] [1, 1] : memref<64x64xf32> to memref<64x16xf32, strided<[64, 1], offset: ?>>
      %bt = memref.subview %b[%k, 0] [16, 64] [1, 1] : memref<64x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
      %araw = memref.alloc() : memref<4096xi8, 3>
      %ash = memref.view %araw[%c0][] : memref<4096xi8, 3> to memref<64x16xf32, 3>
      %braw = memref.alloc() : memref<4096xi8, 3>
      %bsh = memref.view %braw[%c0][] : memref<4096xi8, 3> to memref<16x64xf32, 3>
      scf.forall (%i, %j) in (64, 4) {
        %c = affine.apply #by4(%j)
        %src = memref.subview %at[%i, %c] [1, 4] [1, 1] : memref<64x16xf32, strided<[64, 1], offset: ?>> to memref<1x4xf32, strided<[64, 1], offset: ?>>
        %dst = memref.subview %ash[%i, %c] [1, 4] [1, 1] : memref<64x16xf32, 3> to memref<1x4xf32, strided<[16, 1], offset: ?>, 3>
        %v = vector.load %src[%c0, %c0] : memref<1x4xf32, strided<[64, 1], offset: ?>>, vector<4xf32>
        vector.store %v, %dst[%c0, %c0] : memref<1x4xf32, strided<[16, 1], offset: ?>, 3>, vector<4xf32>
      } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
      scf.forall (%i, %j) in (16, 16) {
        %c = affine.apply #by4(%j)
        %src = memref.subview %bt[%i, %c] [1, 4] [1, 1] : memref<16x64xf32, strided<[64, 1], offset: ?>> to memref<1x4xf32, strided<[64, 1], offset: ?>>
        %dst = memref.subview %bsh[%i, %c] [1, 4] [1, 1] : memref<16x64xf32, 3> to memref<1x4xf32, strided<[64, 1], offset: ?>, 3>
        %v = vector.load %src[%c0, %c0] : memref<1x4xf32, strided<[64, 1], offset: ?>>, vector<4xf32>
        vector.store %v, %dst[%c0, %c0] : memref<1x4xf32, strided<[64, 1], offset: ?>, 3>, vector<4xf32>
      } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
      scf.forall (%i, %j) in (16, 16) {
        %r = affine.apply #by4(%i)
        %c = affine.apply #by4(%j)
        %lhs = memref.subview %ash[%r, 0] [4, 16] [1, 1] : memref<64x16xf32, 3> to memref<4x16xf32, strided<[16, 1], offset: ?>, 3>
        %rhs = memref.subview %bsh[0, %c] [16, 4] [1, 1] : memref<16x64xf32, 3> to memref<16x4xf32, strided<[64, 1], offset: ?>, 3>
        %acc = memref.subview %out[%r, %c] [4, 4] [1, 1] : memref<64x64xf32> to memref<4x4xf32, strided<[64, 1], offset: ?>>
        linalg.matmul ins(%lhs, %rhs : memref<4x16xf32, strided<[16, 1], offset: ?>, 3>, memref<16x4xf32, strided<[64, 1], offset: ?>, 3>) outs(%acc : memref<4x4xf32, strided<[64, 1], offset: ?>>)
      } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
      memref.dealloc %araw : memref<4096xi8, 3>
      memref.dealloc %braw : memref<4096xi8, 3>
    }
    scf.forall (%i, %j) in (4, 64) {
      %r = affine.apply #rows16(%i)
      %o = memref.subview %out[%r, %j] [16, 1] [1, 1] : memref<64x64xf32> to memref<16x1xf32, strided<[64, 1], offset: ?>>
      linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%o : memref<16x1xf32, strided<[64, 1], offset: ?>>) {
      ^bb0(%x: f32):
        %m = arith.maximumf %x, %zero : f32
        linalg.yield %m : f32
      }
    } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
  } {lowerline.gpu_block_threads = 256 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return
}

// -----

// A full reduction mapped to one block of one thread: two plain loop nests.
// CHECK-LABEL: llvm.func @sum_all(
// CHECK-NOT:     llvm.call
// CHECK:         llvm.store
// CHECK:         llvm.cond_br
// CHECK:         llvm.cond_br
// CHECK:         llvm.fadd
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_sum_all(
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> ()>
func.func @sum_all(%arg0: memref<16x8xf32>, %arg1: memref<f32>) attributes {lowerline.num_results = 1 : i64} {
  %cst = arith.constant 0.000000e+00 : f32
  scf.forall (%arg2) in (1) {
    scf.forall (%arg3) in (1) {
      linalg.fill ins(%cst : f32) outs(%arg1 : memref<f32>)
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {lowerline.gpu_block_threads = 1 : i64, mapping = [#gpu.block<linear_dim_0>]}
  scf.forall (%arg2) in (1) {
    scf.forall (%arg3) in (1) {
      linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["reduction", "reduction"]} ins(%arg0 : memref<16x8xf32>) outs(%arg1 : memref<f32>) {
      ^bb0(%in: f32, %out: f32):
        %0 = arith.addf %in, %out : f32
        linalg.yield %0 : f32
      }
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {lowerline.gpu_block_threads = 1 : i64, mapping = [#gpu.block<linear_dim_0>]}
  return
}
