// lowerline-gpu-align-shared-memory puts llvm.align on every workgroup
// attribution of a gpu.func (convert-gpu-to-nvvm carries it to the .shared
// global): the kernels' vector accesses to shared memory claim their
// vector's alignment, up to 64 bytes (rows of 16 floats) by default.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-align-shared-memory)" \
// RUN:   | FileCheck %s --check-prefixes=CHECK,ALIGN64
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-align-shared-memory{alignment=16})" \
// RUN:   | FileCheck %s --check-prefixes=CHECK,ALIGN16

// Input: the loops stage after gpu-kernel-outlining (simplified kernels).

// Every attribution gets the alignment, whatever its element type; the
// kernel body is unchanged.
// CHECK-LABEL:   gpu.func @staged(
// CHECK-SAME:        %[[OUT:[^:]+]]: memref<64xf32>)
// ALIGN64-SAME:      workgroup(%{{.+}} : memref<4096xi8, 3> {llvm.align = 64 : i64}, %[[B:.+]] : memref<32xf32, 3> {llvm.align = 64 : i64}) kernel {
// ALIGN16-SAME:      workgroup(%{{.+}} : memref<4096xi8, 3> {llvm.align = 16 : i64}, %[[B:.+]] : memref<32xf32, 3> {llvm.align = 16 : i64}) kernel {
// CHECK:           %[[V:.+]] = memref.load %[[B]][%{{.+}}] : memref<32xf32, 3>
// CHECK-NEXT:      memref.store %[[V]], %[[OUT]][%{{.+}}] : memref<64xf32>
// CHECK-NEXT:      gpu.return

// Not fired: a kernel without shared memory keeps its signature.
// CHECK-LABEL:   gpu.func @no_shared(
// CHECK-SAME:        %{{[^:]+}}: memref<64xf32>) kernel {
// CHECK-NOT:     llvm.align
// CHECK:         gpu.return

// Not fired: host functions are not touched.
// CHECK-LABEL: func.func @host(
// CHECK-NOT:     llvm.align
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @staged(%out: memref<64xf32>) workgroup(%a : memref<4096xi8, 3>, %b : memref<32xf32, 3>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %b[%c0] : memref<32xf32, 3>
      memref.store %v, %out[%c0] : memref<64xf32>
      gpu.return
    }
    gpu.func @no_shared(%out: memref<64xf32>) kernel {
      gpu.return
    }
  }
  func.func @host(%a: memref<4xf32, 3>) {
    return
  }
}
