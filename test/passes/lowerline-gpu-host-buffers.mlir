// lowerline-gpu-host-buffers puts the buffers of a function that launches
// kernels on the device: a gpu.alloc per argument (inputs copied in, the
// trailing lowerline.num_results out-params copied back before returning),
// per constant (copied in) and per host allocation; a thread's temporary
// inside a launch becomes a memref.alloca. Functions without gpu.launch are
// left alone.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-gpu-host-buffers))" \
// RUN:   --split-input-file --verify-diagnostics | FileCheck %s

// Input: the loops stage after lowerline-gpu-map-to-launch (simplified).

// One input, one out-param, a constant and an intermediate buffer: the
// kernels see only device buffers. The input and the constant are copied in,
// the out-param is not (its old contents are never read) but is copied back
// at the end; every device buffer is freed. The workgroup attribution is not
// touched; the temporary inside the second kernel moves to the stack.
// CHECK-LABEL: func.func @scale(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4xf32>, %[[OUT:[^:]+]]: memref<4xf32>)
// CHECK-NEXT:    %[[DX:.+]] = gpu.alloc () : memref<4xf32>
// CHECK-NEXT:    gpu.memcpy %[[DX]], %[[X]] : memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    %[[DOUT:.+]] = gpu.alloc () : memref<4xf32>
// CHECK-NOT:     gpu.memcpy %[[DOUT]]
// CHECK:         %[[W:.+]] = memref.get_global @__constant_4xf32 : memref<4xf32>
// CHECK-NEXT:    %[[DW:.+]] = gpu.alloc () : memref<4xf32>
// CHECK-NEXT:    gpu.memcpy %[[DW]], %[[W]] : memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    %[[DTMP:.+]] = gpu.alloc () : memref<4xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         gpu.launch
// CHECK-NEXT:      memref.load %[[DX]][
// CHECK-NEXT:      memref.load %[[DW]][
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      memref.store %{{.+}}, %[[DTMP]][
// CHECK:         gpu.launch {{.+}} workgroup(%[[SH:.+]] : memref<4xf32, 3>) {
// CHECK-NEXT:      %[[PRIV:.+]] = memref.alloca() : memref<2xf32>
// CHECK-NEXT:      memref.load %[[DTMP]][
// CHECK-NEXT:      memref.store %{{.+}}, %[[PRIV]][
// CHECK-NEXT:      memref.load %[[PRIV]][
// CHECK-NEXT:      memref.store %{{.+}}, %[[SH]][
// CHECK-NEXT:      memref.load %[[SH]][
// CHECK-NEXT:      memref.store %{{.+}}, %[[DOUT]][
// CHECK-NEXT:      gpu.terminator
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.dealloc %[[DTMP]] : memref<4xf32>
// CHECK-NEXT:    gpu.memcpy %[[OUT]], %[[DOUT]] : memref<4xf32>, memref<4xf32>
// CHECK-DAG:     gpu.dealloc %[[DX]] : memref<4xf32>
// CHECK-DAG:     gpu.dealloc %[[DW]] : memref<4xf32>
// CHECK-DAG:     gpu.dealloc %[[DOUT]] : memref<4xf32>
// CHECK-NOT:     memref.dealloc
// CHECK-NOT:     gpu.memcpy
// CHECK:         return
memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<1.5> {alignment = 64 : i64}
func.func @scale(%x: memref<4xf32>, %out: memref<4xf32>) attributes {lowerline.num_results = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %w = memref.get_global @__constant_4xf32 : memref<4xf32>
  %tmp = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %a = memref.load %x[%tx] : memref<4xf32>
    %b = memref.load %w[%tx] : memref<4xf32>
    %m = arith.mulf %a, %b : f32
    memref.store %m, %tmp[%tx] : memref<4xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1)
             workgroup(%sh : memref<4xf32, 3>) {
    %private = memref.alloc() : memref<2xf32>
    %v = memref.load %tmp[%tx] : memref<4xf32>
    memref.store %v, %private[%c0] : memref<2xf32>
    %v2 = memref.load %private[%c0] : memref<2xf32>
    memref.store %v2, %sh[%tx] : memref<4xf32, 3>
    %v3 = memref.load %sh[%tx] : memref<4xf32, 3>
    memref.store %v3, %out[%tx] : memref<4xf32>
    memref.dealloc %private : memref<2xf32>
    gpu.terminator
  }
  memref.dealloc %tmp : memref<4xf32>
  return
}

// -----

// Two out-params (lowerline.num_results = 2): both are copied back, the
// input only in.
// CHECK-LABEL: func.func @two_results(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4xf32>, %[[O1:[^:]+]]: memref<4xf32>, %[[O2:[^:]+]]: memref<4xf32>)
// CHECK-NEXT:    %[[DX:.+]] = gpu.alloc ()
// CHECK-NEXT:    gpu.memcpy %[[DX]], %[[X]]
// CHECK-NEXT:    %[[D1:.+]] = gpu.alloc ()
// CHECK-NEXT:    %[[D2:.+]] = gpu.alloc ()
// CHECK:         gpu.launch
// CHECK:           memref.load %[[DX]]
// CHECK:           memref.store %{{.+}}, %[[D1]]
// CHECK:           memref.store %{{.+}}, %[[D2]]
// CHECK:         gpu.memcpy %[[O1]], %[[D1]]
// CHECK-NEXT:    gpu.memcpy %[[O2]], %[[D2]]
// CHECK-NOT:     gpu.memcpy %[[X]]
// CHECK:         return
func.func @two_results(%x: memref<4xf32>, %o1: memref<4xf32>, %o2: memref<4xf32>) attributes {lowerline.num_results = 2 : i64} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %a = memref.load %x[%tx] : memref<4xf32>
    memref.store %a, %o1[%tx] : memref<4xf32>
    memref.store %a, %o2[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}

// -----

// Not fired: a function without gpu.launch keeps its host buffers.
// CHECK-LABEL: func.func @host_only(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4xf32>, %[[OUT:[^:]+]]: memref<4xf32>)
// CHECK-NOT:     gpu.
// CHECK:         %[[TMP:.+]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    memref.copy %[[X]], %[[TMP]]
// CHECK-NEXT:    memref.copy %[[TMP]], %[[OUT]]
// CHECK-NEXT:    memref.dealloc %[[TMP]]
// CHECK-NEXT:    return
func.func @host_only(%x: memref<4xf32>, %out: memref<4xf32>) attributes {lowerline.num_results = 1 : i64} {
  %tmp = memref.alloc() : memref<4xf32>
  memref.copy %x, %tmp : memref<4xf32> to memref<4xf32>
  memref.copy %tmp, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %tmp : memref<4xf32>
  return
}

// -----

// Error: a buffer of dynamic shape cannot be allocated on the device.
// CHECK-NOT: func.func @dynamic_argument
// expected-error @below {{cannot place on the GPU: argument 0 of dynamic shape memref<?xf32>}}
func.func @dynamic_argument(%x: memref<?xf32>) attributes {lowerline.num_results = 0 : i64} {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %cst, %x[%c0] : memref<?xf32>
    gpu.terminator
  }
  return
}
