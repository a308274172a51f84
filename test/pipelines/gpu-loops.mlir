// The GPU loops stage (lowerline-gpu-to-loops): each block forall becomes a
// gpu.launch (barriers after thread foralls, shared buffers as workgroup
// attributions), linalg ops become loops, the host's buffers move to the
// device, and the kernels are outlined into a gpu.module carrying the NVVM
// target, their shared memory aligned for vector access.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-loops{target=sm_80})" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-loops{target=sm_90 opt-level=2})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=SM90
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-loops)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE

// No structured op, forall, inline launch or allocation is left: the host
// launches outlined kernels on device buffers.
// NONE-NOT: linalg.
// NONE-NOT: scf.forall
// NONE-NOT: gpu.launch {
// NONE-NOT: gpu.launch blocks
// NONE-NOT: memref.alloc
// NONE-NOT: memref.dealloc
// NONE-NOT: lowerline.gpu_block_threads

// SM90: gpu.module @matmul_relu_kernel [#nvvm.target<{{.*}}chip = "sm_90", features = "+ptx80">]
// SM90: gpu.module @scale_kernel [#nvvm.target<{{.*}}chip = "sm_90", features = "+ptx80">]

// Input: the bufferized stage's output (lowerline-gpu-to-bufferized),
// simplified: the 4x4 tile of each thread is a linalg.matmul (the stage
// vectorizes it into FMAs).

// 64x64x64 matmul + relu in one block of 256 threads. Host: inputs copied
// to device buffers, the kernel launched on them, the result copied back.
// Kernel: the fill, then per k step the two copies into shared memory
// (vector<4xf32> rows) and the 4x4 tile product, each followed by a
// barrier, then the relu.
// CHECK:       module attributes {gpu.container_module} {
// CHECK-LABEL:   func.func @matmul_relu(
// CHECK-SAME:        %[[A:[^:]+]]: memref<64x64xf32>, %[[B:[^:]+]]: memref<64x64xf32>, %[[OUT:[^:]+]]: memref<64x64xf32>,
// CHECK-SAME:        %{{[^:]+}}: memref<?xi8>, %[[SCRATCH:[^:]+]]: memref<?xi8>)
// CHECK-SAME:        lowerline.gpu_buffers = array<i64: 0, 49152>
// CHECK-DAG:       %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:       %[[C256:.+]] = arith.constant 256 : index
// CHECK:           %[[DA:.+]] = memref.view %[[SCRATCH]][%{{.+}}][] : memref<?xi8> to memref<64x64xf32>
// CHECK-NEXT:      gpu.memcpy %[[DA]], %[[A]]
// CHECK-NEXT:      %[[DB:.+]] = memref.view %[[SCRATCH]]
// CHECK-NEXT:      gpu.memcpy %[[DB]], %[[B]]
// CHECK-NEXT:      %[[DOUT:.+]] = memref.view %[[SCRATCH]]
// CHECK-NEXT:      gpu.launch_func @[[KERNEL:matmul_relu_kernel]]::@matmul_relu_kernel blocks in (%[[C1]], %[[C1]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) args(%[[DOUT]] : memref<64x64xf32>, %[[DA]] : memref<64x64xf32>, %[[DB]] : memref<64x64xf32>)
// CHECK-NEXT:      gpu.memcpy %[[OUT]], %[[DOUT]]
// CHECK-NEXT:      return
// CHECK:         gpu.module @[[KERNEL]] [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">] {
// CHECK-NEXT:      gpu.func @matmul_relu_kernel(%[[KOUT:[^:]+]]: memref<64x64xf32>, %[[KA:[^:]+]]: memref<64x64xf32>, %[[KB:[^:]+]]: memref<64x64xf32>)
// CHECK-SAME:          workgroup(%[[SA:[^ ]+]] : memref<4096xi8, 3> {llvm.align = 64 : i64}, %[[SB:[^ ]+]] : memref<4096xi8, 3> {llvm.align = 64 : i64})
// CHECK-SAME:          kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>}
// CHECK:             %[[TID:.+]] = gpu.thread_id x
// CHECK:             scf.for
// CHECK-NEXT:          memref.store
// CHECK-NEXT:        }
// CHECK-NEXT:        gpu.barrier
// CHECK-NEXT:        scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-DAG:           memref.subview %[[KA]][0, %[[K]]] [64, 16] [1, 1]
// CHECK-DAG:           memref.subview %[[KB]][%[[K]], 0] [16, 64] [1, 1]
// CHECK-DAG:           %[[VA:.+]] = memref.view %[[SA]][%{{.+}}][] : memref<4096xi8, 3> to memref<64x16xf32, 3>
// CHECK-DAG:           %[[VB:.+]] = memref.view %[[SB]][%{{.+}}][] : memref<4096xi8, 3> to memref<16x64xf32, 3>
// CHECK:               %[[V:.+]] = vector.load %{{.+}} : memref<1x4xf32, strided<[64, 1], offset: ?>>, vector<4xf32>
// CHECK-NEXT:          vector.store %[[V]], %{{.+}} : memref<1x4xf32, strided<[16, 1], offset: ?>, 3>, vector<4xf32>
// CHECK-NEXT:          gpu.barrier
// CHECK:               %[[V:.+]] = vector.load %{{.+}} : memref<1x4xf32, strided<[64, 1], offset: ?>>, vector<4xf32>
// CHECK-NEXT:          vector.store %[[V]], %{{.+}} : memref<1x4xf32, strided<[64, 1], offset: ?>, 3>, vector<4xf32>
// CHECK-NEXT:          gpu.barrier
// CHECK:               memref.subview %[[VA]]
// CHECK:               memref.subview %[[VB]]
// CHECK:               scf.for
// CHECK:                 scf.for
// CHECK:                   scf.for
// CHECK:                     arith.mulf
// CHECK:                     arith.addf
// CHECK:               gpu.barrier
// CHECK-NEXT:        }
// CHECK-NEXT:        scf.for
// CHECK:               arith.maximumf
// CHECK:             gpu.barrier
// CHECK-NEXT:        gpu.return
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

// An elementwise op with a constant operand: the kernel reads the constant
// in the weights buffer (@scale_weights copies it there); the block has 32
// threads, one element each.
// CHECK:       module attributes {gpu.container_module} {
// CHECK-LABEL:   func.func @scale(
// CHECK-SAME:        %[[X:[^:]+]]: memref<4x8xf32>, %[[OUT:[^:]+]]: memref<4x8xf32>,
// CHECK-SAME:        %[[WEIGHTS:[^:]+]]: memref<?xi8>, %[[SCRATCH:[^:]+]]: memref<?xi8>)
// CHECK-SAME:        lowerline.gpu_buffers = array<i64: 256, 512>
// CHECK-DAG:       %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG:       %[[C32:.+]] = arith.constant 32 : index
// CHECK:           %[[DX:.+]] = memref.view %[[SCRATCH]][%{{.+}}][] : memref<?xi8> to memref<4x8xf32>
// CHECK-NEXT:      gpu.memcpy %[[DX]], %[[X]]
// CHECK-NEXT:      %[[DOUT:.+]] = memref.view %[[SCRATCH]]
// CHECK-NEXT:      %[[DW:.+]] = memref.view %[[WEIGHTS]][%{{.+}}][] : memref<?xi8> to memref<8xf32>
// CHECK-NEXT:      gpu.launch_func @scale_kernel::@scale_kernel blocks in (%[[C1]], %[[C1]], %[[C1]]) threads in (%[[C32]], %[[C1]], %[[C1]]) args(%[[DX]] : memref<4x8xf32>, %[[DW]] : memref<8xf32>, %[[DOUT]] : memref<4x8xf32>)
// CHECK-NEXT:      gpu.memcpy %[[OUT]], %[[DOUT]]
// CHECK:         gpu.module @scale_kernel [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">] {
// CHECK-NEXT:      gpu.func @scale_kernel({{.+}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
// CHECK-NOT:         workgroup
// CHECK:             gpu.thread_id x
// CHECK:             memref.load
// CHECK:             memref.load
// CHECK:             arith.mulf
// CHECK:             memref.store
// CHECK-NEXT:        gpu.barrier
// CHECK-NEXT:        gpu.return
memref.global "private" constant @__constant_8xf32 : memref<8xf32> = dense<2.000000e+00> {alignment = 64 : i64}
func.func @scale(%x: memref<4x8xf32>, %out: memref<4x8xf32>) attributes {lowerline.num_results = 1 : i64} {
  %w = memref.get_global @__constant_8xf32 : memref<8xf32>
  scf.forall (%bi, %bj) in (1, 1) {
    scf.forall (%i, %j) in (4, 8) {
      %xs = memref.subview %x[%i, %j] [1, 1] [1, 1] : memref<4x8xf32> to memref<1x1xf32, strided<[8, 1], offset: ?>>
      %ws = memref.subview %w[%j] [1] [1] : memref<8xf32> to memref<1xf32, strided<[1], offset: ?>>
      %os = memref.subview %out[%i, %j] [1, 1] [1, 1] : memref<4x8xf32> to memref<1x1xf32, strided<[8, 1], offset: ?>>
      linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
          ins(%xs, %ws : memref<1x1xf32, strided<[8, 1], offset: ?>>, memref<1xf32, strided<[1], offset: ?>>) outs(%os : memref<1x1xf32, strided<[8, 1], offset: ?>>) {
      ^bb0(%a: f32, %b: f32, %o: f32):
        %m = arith.mulf %a, %b : f32
        linalg.yield %m : f32
      }
    } {mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]}
  } {lowerline.gpu_block_threads = 32 : i64, mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]}
  return
}
