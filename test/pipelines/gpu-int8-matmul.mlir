// An i8 x i8 -> i32 matmul (lowerline-fold-qdq-matmul's integer kernel) on a
// GPU: lowerline-gpu-distribute turns each thread's 4 x 16 x 4 tile into
// chains of four-byte dot products (vector.reduction of extended byte
// products, target-neutral: the mapped IR also runs on the CPU), and
// lowerline-gpu-dp4a makes each one a PTX dp4a in the kernel.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-to-tiled{target=sm_80},lowerline-gpu-to-bufferized)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=MAPPED
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-pipeline{target=sm_80})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PTX

// 16 outputs per thread, k step 16: 4 dot steps per output, 64 per step of
// the k loop, and no outer products left.
// MAPPED-LABEL: func.func @int8_matmul(
// MAPPED-COUNT-64: vector.reduction <add>, %{{.+}}, %{{.+}} : vector<4xi32> into i32
// MAPPED-NOT:     vector.outerproduct
// MAPPED-NOT:     vector.reduction
// MAPPED:         return
// PTX-LABEL: gpu.binary @int8_matmul_kernel
// PTX-SAME:      dp4a.s32.s32
func.func @int8_matmul(%a: tensor<64x128xi8>, %b: tensor<128x96xi8>) -> tensor<64x96xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<64x96xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<64x96xi32>) -> tensor<64x96xi32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xi8>, tensor<128x96xi8>) outs(%f : tensor<64x96xi32>) -> tensor<64x96xi32>
  return %r : tensor<64x96xi32>
}

// -----

// A batch matmul (an int8 attention's q @ k^T): each thread's tile has a
// batch of one, taken as its matrix.
// MAPPED-LABEL: func.func @int8_batch_matmul(
// MAPPED-COUNT-64: vector.reduction <add>, %{{.+}}, %{{.+}} : vector<4xi32> into i32
// MAPPED-NOT:     vector.outerproduct
// MAPPED:         return
// PTX-LABEL: gpu.binary @int8_batch_matmul_kernel
// PTX-SAME:      dp4a.s32.s32
func.func @int8_batch_matmul(%a: tensor<4x64x128xi8>, %b: tensor<4x128x64xi8>) -> tensor<4x64x64xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4x64x64xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x64x64xi32>) -> tensor<4x64x64xi32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<4x64x128xi8>, tensor<4x128x64xi8>) outs(%f : tensor<4x64x64xi32>) -> tensor<4x64x64xi32>
  return %r : tensor<4x64x64xi32>
}

// -----

// Not fired: a float matmul keeps its FMA outer products.
// MAPPED-LABEL: func.func @f32_matmul(
// MAPPED-NOT:     vector.reduction
// MAPPED:         vector.fma
// PTX-LABEL: gpu.binary @f32_matmul_kernel
// PTX-NOT:       dp4a
func.func @f32_matmul(%a: tensor<64x128xf32>, %b: tensor<128x96xf32>) -> tensor<64x96xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x96xf32>) outs(%f : tensor<64x96xf32>) -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}
