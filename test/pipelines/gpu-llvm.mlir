// The GPU llvm stage (lowerline-gpu-to-llvm): the kernels are lowered to
// NVVM and compiled to PTX (the gpu.binary's assembly, escaped text), the
// host to LLVM calls of the MLIR CUDA runtime (mgpu*) on one stream.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-llvm)" | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-llvm)" \
// RUN:   | FileCheck %s --check-prefix=NONE

// Only the LLVM dialect and the kernel binary are left.
// NONE-NOT: func.func
// NONE-NOT: gpu.module
// NONE-NOT: gpu.func
// NONE-NOT: gpu.alloc
// NONE-NOT: gpu.memcpy
// NONE-NOT: gpu.dealloc
// NONE-NOT: memref.
// NONE-NOT: scf.
// NONE-NOT: arith.
// NONE-NOT: affine.
// NONE-NOT: vector.
// NONE-NOT: unrealized_conversion_cast

// Input: the loops stage's output (lowerline-gpu-to-loops) for a 64x64x64
// f32 matmul + relu in one block of 256 threads, operand tiles staged in
// shared memory as rows of 4 floats.

// Host: a stream; device buffers allocated and the inputs copied on it; the
// kernel launched on the stream with 256 threads; the result copied back,
// the buffers freed, the stream synchronized and destroyed.
// CHECK:       module attributes {gpu.container_module} {
// CHECK-LABEL:   llvm.func @matmul_relu(
// CHECK-SAME:        attributes {llvm.emit_c_interface
// CHECK-DAG:       %[[C256:.+]] = llvm.mlir.constant(256 : index) : i64
// CHECK-DAG:       %[[C1:.+]] = llvm.mlir.constant(1 : index) : i64
// CHECK:           %[[STREAM:.+]] = llvm.call @mgpuStreamCreate() : () -> !llvm.ptr
// CHECK:           %[[DA:.+]] = llvm.call @mgpuMemAlloc(%{{.+}}, %[[STREAM]], %{{.+}})
// CHECK-NEXT:      llvm.call @mgpuMemcpy(%[[DA]], %{{.+}}, %{{.+}}, %[[STREAM]])
// CHECK-NEXT:      %[[DB:.+]] = llvm.call @mgpuMemAlloc(%{{.+}}, %[[STREAM]], %{{.+}})
// CHECK-NEXT:      llvm.call @mgpuMemcpy(%[[DB]], %{{.+}}, %{{.+}}, %[[STREAM]])
// CHECK-NEXT:      %[[DOUT:.+]] = llvm.call @mgpuMemAlloc(%{{.+}}, %[[STREAM]], %{{.+}})
// CHECK-NEXT:      gpu.launch_func <%[[STREAM]] : !llvm.ptr> @matmul_relu_kernel::@matmul_relu_kernel blocks in (%[[C1]], %[[C1]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) : i64 args(%[[DOUT]] : !llvm.ptr, %[[DOUT]] : !llvm.ptr,
// CHECK-NEXT:      llvm.call @mgpuMemcpy(%{{.+}}, %[[DOUT]], %{{.+}}, %[[STREAM]])
// CHECK-DAG:       llvm.call @mgpuMemFree(%[[DA]], %[[STREAM]])
// CHECK-DAG:       llvm.call @mgpuMemFree(%[[DB]], %[[STREAM]])
// CHECK-DAG:       llvm.call @mgpuMemFree(%[[DOUT]], %[[STREAM]])
// CHECK:           llvm.call @mgpuStreamSynchronize(%[[STREAM]])
// CHECK-NEXT:      llvm.call @mgpuStreamDestroy(%[[STREAM]])
// CHECK-NEXT:      llvm.return
// The C interface wrapper the library exports.
// CHECK-LABEL:   llvm.func @_mlir_ciface_matmul_relu(
// CHECK:           llvm.call @matmul_relu(
// The kernel as PTX for sm_80: 256 threads, both shared tiles 64-byte
// aligned; the zero fill, a barrier, then in the k loop each tile copy is a
// 16-byte global load (ld.global.v4) and shared store followed by bar.sync,
// and the tile product reads shared memory.
// CHECK:         gpu.binary @matmul_relu_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">, {{.*}}assembly = "
// CHECK-SAME:        .target sm_80
// CHECK-SAME:        .entry matmul_relu_kernel(
// CHECK-SAME:        .maxntid 256, 1, 1
// CHECK-SAME:        .shared .align 64 .b8 __wg_matmul_relu_kernel_0[4096];
// CHECK-SAME:        .shared .align 64 .b8 __wg_matmul_relu_kernel_1[4096];
// CHECK-SAME:        st.global
// CHECK-SAME:        bar.sync
// CHECK-SAME:        ld.global.v4.{{[bf]}}32
// CHECK-SAME:        st.shared.v4.{{[bf]}}32
// CHECK-SAME:        bar.sync
// CHECK-SAME:        ld.global.v4.{{[bf]}}32
// CHECK-SAME:        st.shared.v4.{{[bf]}}32
// CHECK-SAME:        bar.sync
// CHECK-SAME:        ld.shared
// CHECK-SAME:        bar.sync
// CHECK-SAME:        ret;
// The runtime functions the host calls.
// CHECK-DAG:     llvm.func @mgpuStreamCreate() -> !llvm.ptr
// CHECK-DAG:     llvm.func @mgpuMemAlloc(i64, !llvm.ptr, i8) -> !llvm.ptr
// CHECK-DAG:     llvm.func @mgpuMemcpy(!llvm.ptr, !llvm.ptr, i64, !llvm.ptr)
// CHECK-DAG:     llvm.func @mgpuMemFree(!llvm.ptr, !llvm.ptr)
// CHECK-DAG:     llvm.func @mgpuStreamSynchronize(!llvm.ptr)
// CHECK-DAG:     llvm.func @mgpuStreamDestroy(!llvm.ptr)
#map = affine_map<()[s0] -> (s0 mod 64)>
#map1 = affine_map<()[s0] -> ((s0 floordiv 64) * 16)>
#map2 = affine_map<()[s0] -> (s0 floordiv 4)>
#map3 = affine_map<()[s0] -> (s0 * 4 - (s0 floordiv 4) * 16)>
#map4 = affine_map<()[s0] -> (s0 floordiv 16)>
#map5 = affine_map<()[s0] -> (s0 * 4 - (s0 floordiv 16) * 64)>
#map6 = affine_map<()[s0] -> ((s0 floordiv 16) * 4)>
module attributes {gpu.container_module} {
  func.func @matmul_relu(%arg0: memref<64x64xf32>, %arg1: memref<64x64xf32>, %arg2: memref<64x64xf32>) attributes {lowerline.num_results = 1 : i64} {
    %c256 = arith.constant 256 : index
    %c1 = arith.constant 1 : index
    %memref = gpu.alloc  () : memref<64x64xf32>
    gpu.memcpy  %memref, %arg0 : memref<64x64xf32>, memref<64x64xf32>
    %memref_0 = gpu.alloc  () : memref<64x64xf32>
    gpu.memcpy  %memref_0, %arg1 : memref<64x64xf32>, memref<64x64xf32>
    %memref_1 = gpu.alloc  () : memref<64x64xf32>
    gpu.launch_func  @matmul_relu_kernel::@matmul_relu_kernel blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)  args(%memref_1 : memref<64x64xf32>, %memref : memref<64x64xf32>, %memref_0 : memref<64x64xf32>)
    gpu.memcpy  %arg2, %memref_1 : memref<64x64xf32>, memref<64x64xf32>
    gpu.dealloc  %memref : memref<64x64xf32>
    gpu.dealloc  %memref_0 : memref<64x64xf32>
    gpu.dealloc  %memref_1 : memref<64x64xf32>
    return
  }
  gpu.module @matmul_relu_kernel [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">] {
    gpu.func @matmul_relu_kernel(%arg0: memref<64x64xf32>, %arg1: memref<64x64xf32>, %arg2: memref<64x64xf32>) workgroup(%arg3 : memref<4096xi8, 3> {llvm.align = 64 : i64}, %arg4 : memref<4096xi8, 3> {llvm.align = 64 : i64}) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %c64 = arith.constant 64 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c1 = arith.constant 1 : index
      %c0 = arith.constant 0 : index
      %cst = arith.constant 0.000000e+00 : f32
      %thread_id_x = gpu.thread_id  x
      %0 = affine.apply #map()[%thread_id_x]
      %1 = affine.apply #map1()[%thread_id_x]
      %subview = memref.subview %arg0[%1, %0] [16, 1] [1, 1] : memref<64x64xf32> to memref<16x1xf32, strided<[64, 1], offset: ?>>
      scf.for %arg5 = %c0 to %c16 step %c1 {
        memref.store %cst, %subview[%arg5, %c0] : memref<16x1xf32, strided<[64, 1], offset: ?>>
      }
      gpu.barrier
      scf.for %arg5 = %c0 to %c64 step %c16 {
        %subview_0 = memref.subview %arg1[0, %arg5] [64, 16] [1, 1] : memref<64x64xf32> to memref<64x16xf32, strided<[64, 1], offset: ?>>
        %subview_1 = memref.subview %arg2[%arg5, 0] [16, 64] [1, 1] : memref<64x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
        %view = memref.view %arg3[%c0][] : memref<4096xi8, 3> to memref<64x16xf32, 3>
        %view_2 = memref.view %arg4[%c0][] : memref<4096xi8, 3> to memref<16x64xf32, 3>
        %2 = affine.apply #map2()[%thread_id_x]
        %3 = affine.apply #map3()[%thread_id_x]
        %subview_3 = memref.subview %subview_0[%2, %3] [1, 4] [1, 1] : memref<64x16xf32, strided<[64, 1], offset: ?>> to memref<1x4xf32, strided<[64, 1], offset: ?>>
        %subview_4 = memref.subview %view[%2, %3] [1, 4] [1, 1] : memref<64x16xf32, 3> to memref<1x4xf32, strided<[16, 1], offset: ?>, 3>
        %4 = vector.load %subview_3[%c0, %c0] : memref<1x4xf32, strided<[64, 1], offset: ?>>, vector<4xf32>
        vector.store %4, %subview_4[%c0, %c0] : memref<1x4xf32, strided<[16, 1], offset: ?>, 3>, vector<4xf32>
        gpu.barrier
        %5 = affine.apply #map4()[%thread_id_x]
        %6 = affine.apply #map5()[%thread_id_x]
        %subview_5 = memref.subview %subview_1[%5, %6] [1, 4] [1, 1] : memref<16x64xf32, strided<[64, 1], offset: ?>> to memref<1x4xf32, strided<[64, 1], offset: ?>>
        %subview_6 = memref.subview %view_2[%5, %6] [1, 4] [1, 1] : memref<16x64xf32, 3> to memref<1x4xf32, strided<[64, 1], offset: ?>, 3>
        %7 = vector.load %subview_5[%c0, %c0] : memref<1x4xf32, strided<[64, 1], offset: ?>>, vector<4xf32>
        vector.store %7, %subview_6[%c0, %c0] : memref<1x4xf32, strided<[64, 1], offset: ?>, 3>, vector<4xf32>
        gpu.barrier
        %8 = affine.apply #map6()[%thread_id_x]
        %subview_7 = memref.subview %view[%8, 0] [4, 16] [1, 1] : memref<64x16xf32, 3> to memref<4x16xf32, strided<[16, 1], offset: ?>, 3>
        %subview_8 = memref.subview %view_2[0, %6] [16, 4] [1, 1] : memref<16x64xf32, 3> to memref<16x4xf32, strided<[64, 1], offset: ?>, 3>
        %subview_9 = memref.subview %arg0[%8, %6] [4, 4] [1, 1] : memref<64x64xf32> to memref<4x4xf32, strided<[64, 1], offset: ?>>
        scf.for %arg6 = %c0 to %c4 step %c1 {
          scf.for %arg7 = %c0 to %c4 step %c1 {
            scf.for %arg8 = %c0 to %c16 step %c1 {
              %9 = memref.load %subview_7[%arg6, %arg8] : memref<4x16xf32, strided<[16, 1], offset: ?>, 3>
              %10 = memref.load %subview_8[%arg8, %arg7] : memref<16x4xf32, strided<[64, 1], offset: ?>, 3>
              %11 = memref.load %subview_9[%arg6, %arg7] : memref<4x4xf32, strided<[64, 1], offset: ?>>
              %12 = arith.mulf %9, %10 : f32
              %13 = arith.addf %11, %12 : f32
              memref.store %13, %subview_9[%arg6, %arg7] : memref<4x4xf32, strided<[64, 1], offset: ?>>
            }
          }
        }
        gpu.barrier
      }
      scf.for %arg5 = %c0 to %c16 step %c1 {
        %2 = memref.load %subview[%arg5, %c0] : memref<16x1xf32, strided<[64, 1], offset: ?>>
        %3 = arith.maximumf %2, %cst : f32
        memref.store %3, %subview[%arg5, %c0] : memref<16x1xf32, strided<[64, 1], offset: ?>>
      }
      gpu.barrier
      gpu.return
    }
  }
}
