// lowerline-gpu-host-buffers puts the buffers of a function that launches
// kernels on the device, as views of two trailing device buffers the caller
// allocates once: the weights (the constants, filled by @<name>_weights) and
// the scratch (a copy per argument: inputs copied in, the trailing
// lowerline.num_results out-params copied back before returning; every host
// allocation), planned with reuse; a thread's temporary inside a launch
// becomes a memref.alloca. Functions without gpu.launch are left alone.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-host-buffers)" \
// RUN:   --split-input-file --verify-diagnostics | FileCheck %s

// Input: the loops stage after lowerline-gpu-map-to-launch (simplified).

// One input, one out-param, a constant and an intermediate buffer: the
// kernels see only views of the two trailing device buffers. The input's
// copy, the out-param's copy and the intermediate live together here, in
// the scratch at 256-byte steps; the constant is in the weights buffer,
// which @scale_weights fills (once, at the caller's load). The input is
// copied in, the out-param is not (its old contents are never read) but is
// copied back at the end; nothing is allocated or freed. The workgroup
// attribution is not touched; the temporary inside the second kernel moves
// to the stack.
// CHECK-LABEL: func.func @scale(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4xf32>, %[[OUT:[^:]+]]: memref<4xf32>,
// CHECK-SAME:      %[[WEIGHTS:[^:]+]]: memref<?xi8>, %[[SCRATCH:[^:]+]]: memref<?xi8>)
// CHECK-SAME:      lowerline.gpu_buffers = array<i64: 256, 768>
// CHECK-NEXT:    %[[O0:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[DX:.+]] = memref.view %[[SCRATCH]][%[[O0]]][] : memref<?xi8> to memref<4xf32>
// CHECK-NEXT:    gpu.memcpy %[[DX]], %[[X]] : memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    %[[O1:.+]] = arith.constant 256 : index
// CHECK-NEXT:    %[[DOUT:.+]] = memref.view %[[SCRATCH]][%[[O1]]][]
// CHECK-NOT:     gpu.memcpy %[[DOUT]]
// CHECK:         %[[DW:.+]] = memref.view %[[WEIGHTS]][%{{.+}}][] : memref<?xi8> to memref<4xf32>
// CHECK:         %[[O2:.+]] = arith.constant 512 : index
// CHECK-NEXT:    %[[DTMP:.+]] = memref.view %[[SCRATCH]][%[[O2]]][]
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     gpu.alloc
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
// CHECK-NEXT:    gpu.memcpy %[[OUT]], %[[DOUT]] : memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    return
// The constants' upload: each copied to its place in the weights buffer.
// CHECK-LABEL: func.func @scale_weights(
// CHECK-SAME:      %[[W:[^:]+]]: memref<?xi8>) {
// CHECK-NEXT:    %[[HOST:.+]] = memref.get_global @__constant_4xf32 : memref<4xf32>
// CHECK-NEXT:    %[[WO:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[DEV:.+]] = memref.view %[[W]][%[[WO]]][] : memref<?xi8> to memref<4xf32>
// CHECK-NEXT:    gpu.memcpy %[[DEV]], %[[HOST]] : memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    return
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

// Bytes are reused: the input's copy is dead after the first kernel, so
// the second intermediate takes its place (offset 0); two reads of one
// constant share its place in the weights buffer, the other constant
// follows at the next 256 bytes (a 300-byte constant rounds up to 512).
// Two out-params (lowerline.num_results = 2): both are copied back.
// CHECK-LABEL: func.func @reuse(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4xf32>, %[[O1:[^:]+]]: memref<4xf32>, %[[O2:[^:]+]]: memref<4xf32>,
// CHECK-SAME:      %[[WEIGHTS:[^:]+]]: memref<?xi8>, %[[SCRATCH:[^:]+]]: memref<?xi8>)
// CHECK-SAME:      lowerline.gpu_buffers = array<i64: 768, 1024>
// CHECK:         %[[DX:.+]] = memref.view %[[SCRATCH]][%{{.+}}][] : memref<?xi8> to memref<4xf32>
// CHECK:         %[[OFF_W1:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[W1:.+]] = memref.view %[[WEIGHTS]][%[[OFF_W1]]][] : memref<?xi8> to memref<75xf32>
// CHECK-NEXT:    %[[OFF_W2:.+]] = arith.constant 512 : index
// CHECK-NEXT:    %[[W2:.+]] = memref.view %[[WEIGHTS]][%[[OFF_W2]]][] : memref<?xi8> to memref<4xf32>
// CHECK-NEXT:    %[[OFF_W1B:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[W1B:.+]] = memref.view %[[WEIGHTS]][%[[OFF_W1B]]][] : memref<?xi8> to memref<75xf32>
// CHECK:         gpu.launch
// CHECK:           memref.load %[[DX]]
// CHECK:           memref.load %[[W1]]
// CHECK:         %[[C0B:.+]] = arith.constant 0 : index
// CHECK-NEXT:    %[[T2:.+]] = memref.view %[[SCRATCH]][%[[C0B]]][] : memref<?xi8> to memref<4xf32>
// CHECK-NEXT:    gpu.launch
// CHECK:           memref.load %[[W1B]]
// CHECK:           memref.store %{{.+}}, %[[T2]]
// CHECK:         gpu.memcpy %[[O1]], %{{.+}}
// CHECK-NEXT:    gpu.memcpy %[[O2]], %{{.+}}
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @reuse_weights(
// CHECK-COUNT-2: gpu.memcpy
// CHECK-NEXT:    return
memref.global "private" constant @w75 : memref<75xf32> = dense<2.0>
memref.global "private" constant @w4 : memref<4xf32> = dense<3.0>
func.func @reuse(%x: memref<4xf32>, %o1: memref<4xf32>, %o2: memref<4xf32>) attributes {lowerline.num_results = 2 : i64} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %w1 = memref.get_global @w75 : memref<75xf32>
  %w2 = memref.get_global @w4 : memref<4xf32>
  %w1b = memref.get_global @w75 : memref<75xf32>
  %t1 = memref.alloc() : memref<4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %a = memref.load %x[%tx] : memref<4xf32>
    %b = memref.load %w1[%tx] : memref<75xf32>
    %m = arith.mulf %a, %b : f32
    memref.store %m, %t1[%tx] : memref<4xf32>
    gpu.terminator
  }
  %t2 = memref.alloc() : memref<4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %a = memref.load %t1[%tx] : memref<4xf32>
    %b = memref.load %w1b[%tx] : memref<75xf32>
    %c = memref.load %w2[%tx] : memref<4xf32>
    %m = arith.mulf %a, %b : f32
    %n = arith.addf %m, %c : f32
    memref.store %n, %t2[%tx] : memref<4xf32>
    memref.store %m, %o1[%tx] : memref<4xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %a = memref.load %t2[%tx] : memref<4xf32>
    memref.store %a, %o2[%tx] : memref<4xf32>
    gpu.terminator
  }
  memref.dealloc %t1 : memref<4xf32>
  memref.dealloc %t2 : memref<4xf32>
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
