// lowerline-gpu-shared-to-host-memory drops GPU memory spaces (shared memory
// as address space 3 or #gpu.address_space<...>) from every memref type, so
// that the mapped IR of the bufferized stage lowers for the CPU; nothing
// else changes (the foralls and their mappings stay).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-shared-to-host-memory)" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-shared-to-host-memory)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE

// No memory space is left anywhere.
// NONE-NOT: , 3>
// NONE-NOT: address_space

// Input: the mapped IR of lowerline-gpu-distribute (simplified): a tile
// staged in shared memory by one thread forall and read by the next.
// The shared buffer, its view and every subview of it become host memory;
// the strided layouts are kept.
// CHECK-LABEL: func.func @staged(
// CHECK-SAME:      %[[A:[^:]+]]: memref<64x16xf32>, %[[OUT:[^:]+]]: memref<64x16xf32>)
// CHECK:         scf.forall (%{{.+}}) in (1) {
// CHECK-NEXT:      %[[RAW:.+]] = memref.alloc() : memref<4096xi8>
// CHECK-NEXT:      %[[TILE:.+]] = memref.view %[[RAW]][%{{.+}}][] : memref<4096xi8> to memref<64x16xf32>
// CHECK-NEXT:      scf.forall (%{{.+}}) in (64) {
// CHECK-NEXT:        %[[SRC:.+]] = memref.subview %[[A]]
// CHECK-NEXT:        %[[DST:.+]] = memref.subview %[[TILE]][%{{.+}}, 0] [1, 16] [1, 1] : memref<64x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:        memref.copy %[[SRC]], %[[DST]] : memref<1x16xf32, strided<[16, 1], offset: ?>> to memref<1x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:      } {mapping = [#gpu.thread<linear_dim_0>]}
// CHECK-NEXT:      scf.forall (%{{.+}}) in (64) {
// CHECK-NEXT:        %[[SRC:.+]] = memref.subview %[[TILE]][%{{.+}}, 0] [1, 16] [1, 1] : memref<64x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
// CHECK-NEXT:        %[[DST:.+]] = memref.subview %[[OUT]]
// CHECK-NEXT:        %[[V:.+]] = vector.load %[[SRC]][%{{.+}}, %{{.+}}] : memref<1x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
// CHECK-NEXT:        vector.store %[[V]], %[[DST]]
// CHECK-NEXT:      } {mapping = [#gpu.thread<linear_dim_0>]}
// CHECK-NEXT:      memref.dealloc %[[RAW]] : memref<4096xi8>
// CHECK-NEXT:    } {lowerline.gpu_block_threads = 64 : i64, mapping = [#gpu.block<linear_dim_0>]}
func.func @staged(%a: memref<64x16xf32>, %out: memref<64x16xf32>) {
  %c0 = arith.constant 0 : index
  scf.forall (%b) in (1) {
    %raw = memref.alloc() : memref<4096xi8, 3>
    %tile = memref.view %raw[%c0][] : memref<4096xi8, 3> to memref<64x16xf32, 3>
    scf.forall (%t) in (64) {
      %src = memref.subview %a[%t, 0] [1, 16] [1, 1] : memref<64x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
      %dst = memref.subview %tile[%t, 0] [1, 16] [1, 1] : memref<64x16xf32, 3> to memref<1x16xf32, strided<[16, 1], offset: ?>, 3>
      memref.copy %src, %dst : memref<1x16xf32, strided<[16, 1], offset: ?>> to memref<1x16xf32, strided<[16, 1], offset: ?>, 3>
    } {mapping = [#gpu.thread<linear_dim_0>]}
    scf.forall (%t) in (64) {
      %src = memref.subview %tile[%t, 0] [1, 16] [1, 1] : memref<64x16xf32, 3> to memref<1x16xf32, strided<[16, 1], offset: ?>, 3>
      %dst = memref.subview %out[%t, 0] [1, 16] [1, 1] : memref<64x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
      %v = vector.load %src[%c0, %c0] : memref<1x16xf32, strided<[16, 1], offset: ?>, 3>, vector<16xf32>
      vector.store %v, %dst[%c0, %c0] : memref<1x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
    memref.dealloc %raw : memref<4096xi8, 3>
  } {lowerline.gpu_block_threads = 64 : i64, mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// The GPU dialect's named spaces go too, also from block arguments (a loop's
// iter_args) and loop results.
// CHECK-LABEL: func.func @named_spaces(
// CHECK:         %[[W:.+]] = memref.alloca() : memref<8xf32>
// CHECK:         %[[P:.+]] = memref.alloca() : memref<8xf32>
// CHECK:         %[[R:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[M:.+]] = %[[W]]) -> (memref<8xf32>) {
// CHECK-NEXT:      scf.yield %[[M]] : memref<8xf32>
// CHECK:         memref.load %[[R]][%{{.+}}] : memref<8xf32>
// CHECK:         memref.store %{{.+}}, %[[P]][%{{.+}}] : memref<8xf32>
func.func @named_spaces(%n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %w = memref.alloca() : memref<8xf32, #gpu.address_space<workgroup>>
  %p = memref.alloca() : memref<8xf32, #gpu.address_space<private>>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%m = %w) -> (memref<8xf32, #gpu.address_space<workgroup>>) {
    scf.yield %m : memref<8xf32, #gpu.address_space<workgroup>>
  }
  %v = memref.load %r[%c0] : memref<8xf32, #gpu.address_space<workgroup>>
  memref.store %v, %p[%c0] : memref<8xf32, #gpu.address_space<private>>
  %x = memref.load %p[%c0] : memref<8xf32, #gpu.address_space<private>>
  return %x : f32
}

// -----

// Not fired: IR without memory spaces is left as it is.
// CHECK-LABEL: func.func @host_memory(
// CHECK-SAME:      %[[A:[^:]+]]: memref<4xf32>) -> memref<4xf32> {
// CHECK-NEXT:    %[[B:.+]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    memref.copy %[[A]], %[[B]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    return %[[B]] : memref<4xf32>
func.func @host_memory(%a: memref<4xf32>) -> memref<4xf32> {
  %b = memref.alloc() : memref<4xf32>
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  return %b : memref<4xf32>
}
