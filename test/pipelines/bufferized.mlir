// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-bufferized)" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-bufferized)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-bufferized{arena=false})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=MALLOC

// Whatever the function, nothing of the tensor world is left.
// NONE-NOT: tensor
// NONE-NOT: bufferization.

// Input: the graph stage's output (lowerline-to-graph).

// The result becomes a trailing out-param and the function returns nothing;
// the static result buffer is the out-param itself, so fill, matmul and the
// epilogue all write into it and nothing is allocated or copied.
// CHECK-LABEL: func.func @matmul_bias_relu(
// CHECK-SAME:      %[[A:[^:]+]]: memref<16x32xf32>, %[[B:[^:]+]]: memref<32x8xf32>,
// CHECK-SAME:      %[[BIAS:[^:]+]]: memref<8xf32>, %[[OUT:[^:]+]]: memref<16x8xf32>,
// CHECK-SAME:      %{{[^:]+}}: memref<?xi8>)
// CHECK-NOT:     memref.alloc
// CHECK:         linalg.fill ins(%{{.+}} : f32) outs(%[[OUT]] : memref<16x8xf32>)
// CHECK:         linalg.matmul ins(%[[A]], %[[B]] : memref<16x32xf32>, memref<32x8xf32>) outs(%[[OUT]] : memref<16x8xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:        ins(%[[OUT]], %[[BIAS]] : memref<16x8xf32>, memref<8xf32>) outs(%[[OUT]] : memref<16x8xf32>)
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         return{{$}}
func.func @matmul_bias_relu(%arg0: tensor<16x32xf32>, %arg1: tensor<32x8xf32>, %arg2: tensor<8xf32>) -> tensor<16x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<16x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<16x32xf32>, tensor<32x8xf32>) outs(%1 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%2, %arg2 : tensor<16x8xf32>, tensor<8xf32>) outs(%0 : tensor<16x8xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %4 = arith.addf %in, %in_0 : f32
    %5 = arith.maximumf %4, %cst : f32
    linalg.yield %5 : f32
  } -> tensor<16x8xf32>
  return %3 : tensor<16x8xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise(
// CHECK-SAME:      %[[X:[^:]+]]: memref<7x13xf32>, %[[Y:[^:]+]]: memref<7x13xf32>,
// CHECK-SAME:      %[[OUT:[^:]+]]: memref<7x13xf32>,
// CHECK-SAME:      %{{[^:]+}}: memref<?xi8>)
// CHECK-NOT:     memref.alloc
// CHECK:         linalg.generic
// CHECK-SAME:        ins(%[[X]], %[[Y]] : memref<7x13xf32>, memref<7x13xf32>) outs(%[[OUT]] : memref<7x13xf32>)
// CHECK:           math.tanh
// CHECK:           math.exp
// CHECK:         return{{$}}
func.func @elementwise(%arg0: tensor<7x13xf32>, %arg1: tensor<7x13xf32>) -> tensor<7x13xf32> {
  %0 = tensor.empty() : tensor<7x13xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<7x13xf32>, tensor<7x13xf32>) outs(%0 : tensor<7x13xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %2 = math.tanh %in_0 : f32
    %3 = math.exp %in : f32
    %4 = arith.mulf %3, %2 : f32
    %5 = arith.cmpf ogt, %4, %in : f32
    %6 = arith.select %5, %4, %in : f32
    linalg.yield %6 : f32
  } -> tensor<7x13xf32>
  return %1 : tensor<7x13xf32>
}

// -----

// A boolean result is still an i1 memref here; the llvm stage widens it.
// CHECK-LABEL: func.func @compare_to_mask(
// CHECK-SAME:      %[[OUT:[^:]+]]: memref<7x13xi1>,
// CHECK-SAME:      %{{[^:]+}}: memref<?xi8>)
// CHECK:         linalg.generic
// CHECK-SAME:        outs(%[[OUT]] : memref<7x13xi1>)
// CHECK:         return{{$}}
func.func @compare_to_mask(%arg0: tensor<7x13xf32>, %arg1: tensor<7x13xf32>) -> tensor<7x13xi1> {
  %0 = tensor.empty() : tensor<7x13xi1>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<7x13xf32>, tensor<7x13xf32>) outs(%0 : tensor<7x13xi1>) {
  ^bb0(%in: f32, %in_0: f32, %out: i1):
    %2 = arith.cmpf olt, %in, %in_0 : f32
    linalg.yield %2 : i1
  } -> tensor<7x13xi1>
  return %1 : tensor<7x13xi1>
}

// -----

// A constant tensor (not a splat, which the graph stage folds into the body)
// becomes a private constant global; a returned argument is copied into its
// out-param, so the caller owns every output buffer.
// CHECK:       memref.global "private" constant @[[BIAS:.+]] : memref<13xf32> = dense<[0.000000e+00, 1.000000e+00,
// CHECK-LABEL: func.func @constant_and_returned_argument(
// CHECK-SAME:      %[[X:[^:]+]]: memref<7x13xf32>, %[[OUT0:[^:]+]]: memref<7x13xf32>,
// CHECK-SAME:      %[[OUT1:[^:]+]]: memref<7x13xf32>,
// CHECK-SAME:      %{{[^:]+}}: memref<?xi8>)
// CHECK:         %[[G:.+]] = memref.get_global @[[BIAS]] : memref<13xf32>
// CHECK:         linalg.generic
// CHECK-SAME:        ins(%[[X]], %[[G]] : memref<7x13xf32>, memref<13xf32>) outs(%[[OUT0]] : memref<7x13xf32>)
// CHECK:         memref.copy %[[X]], %[[OUT1]]
// CHECK:         return{{$}}
func.func @constant_and_returned_argument(%arg0: tensor<7x13xf32>) -> (tensor<7x13xf32>, tensor<7x13xf32>) {
  %cst = arith.constant dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00, 9.000000e+00, 1.000000e+01, 1.100000e+01, 1.200000e+01]> : tensor<13xf32>
  %0 = tensor.empty() : tensor<7x13xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %cst : tensor<7x13xf32>, tensor<13xf32>) outs(%0 : tensor<7x13xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %2 = arith.addf %in, %in_0 : f32
    linalg.yield %2 : f32
  } -> tensor<7x13xf32>
  return %1, %arg0 : tensor<7x13xf32>, tensor<7x13xf32>
}

// -----

// A dynamically shaped result is computed in its out-param too
// (hoist-dynamic-allocs: the caller sizes it from the inputs' sizes), not in
// a buffer of its own copied to the out-param at the end of every call.
// CHECK-LABEL: func.func @dynamic_result(
// CHECK-SAME:      %[[X:[^:]+]]: memref<?x13xf32>, %[[OUT:[^:]+]]: memref<?x13xf32>,
// CHECK-SAME:      %{{[^:]+}}: memref<?xi8>)
// CHECK-NOT:     memref.alloc
// CHECK:         linalg.generic
// CHECK-SAME:        ins(%[[X]] : memref<?x13xf32>) outs(%[[OUT]] : memref<?x13xf32>)
// CHECK-NOT:     memref.copy
// CHECK-NOT:     memref.dealloc
// CHECK:         return{{$}}
func.func @dynamic_result(%arg0: tensor<?x13xf32>) -> tensor<?x13xf32> {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x13xf32>
  %0 = tensor.empty(%dim) : tensor<?x13xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<?x13xf32>) outs(%0 : tensor<?x13xf32>) {
  ^bb0(%in: f32, %out: f32):
    %2 = math.exp %in : f32
    linalg.yield %2 : f32
  } -> tensor<?x13xf32>
  return %1 : tensor<?x13xf32>
}

// -----

// One result returned twice: each out-param is a buffer of its own (the
// first computed in place, copied into the second). Without
// lowerline-copy-repeated-results, buffer-results-to-out-params crashes here.
// CHECK-LABEL: func.func @result_returned_twice(
// CHECK-SAME:      %[[X:[^:]+]]: memref<7x13xf32>, %[[OUT0:[^:]+]]: memref<7x13xf32>,
// CHECK-SAME:      %[[OUT1:[^:]+]]: memref<7x13xf32>,
// CHECK-SAME:      %{{[^:]+}}: memref<?xi8>)
// CHECK-NOT:     memref.alloc
// CHECK:         linalg.generic
// CHECK-SAME:        ins(%[[X]] : memref<7x13xf32>) outs(%[[OUT0]] : memref<7x13xf32>)
// CHECK:           math.tanh
// CHECK:         memref.copy %[[OUT0]], %[[OUT1]]
// CHECK:         return{{$}}
func.func @result_returned_twice(%arg0: tensor<7x13xf32>) -> (tensor<7x13xf32>, tensor<7x13xf32>) {
  %0 = tensor.empty() : tensor<7x13xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<7x13xf32>) outs(%0 : tensor<7x13xf32>) {
  ^bb0(%in: f32, %out: f32):
    %2 = math.tanh %in : f32
    linalg.yield %2 : f32
  } -> tensor<7x13xf32>
  return %1, %1 : tensor<7x13xf32>, tensor<7x13xf32>
}

// -----

// Buffer reuse (the default): the two unrelated values that CSE made share a
// tensor.empty get buffers of their own (lowerline-split-empty-tensors), and
// each is freed right after its last use (optimize-allocation-liveness), so
// the second allocation can reuse the first's memory (arena=false: malloc's
// reuse at run time)...
// MALLOC-LABEL: func.func @freed_after_last_use(
// MALLOC:         %[[A:.+]] = memref.alloc() {{.*}}: memref<64xf32>
// MALLOC:         linalg.reduce ins(%[[A]] : memref<64xf32>)
// MALLOC:         memref.dealloc %[[A]]
// MALLOC:         %[[B:.+]] = memref.alloc() {{.*}}: memref<64xf32>
// MALLOC:         linalg.reduce ins(%[[B]] : memref<64xf32>)
// MALLOC:         memref.dealloc %[[B]]
// MALLOC-NEXT:    return{{$}}
// ...or (the default) the same bytes of the arena (lowerline-plan-arena):
// one view at one offset, which CSE makes one value; 256 bytes for it, 4 for
// a scalar.
// CHECK-LABEL: func.func @freed_after_last_use(
// CHECK-SAME:      %[[ARENA:[^:]+]]: memref<?xi8>)
// CHECK-SAME:      lowerline.arena = array<i64: 260,
// CHECK:         %[[A:.+]] = memref.view %[[ARENA]][%{{.+}}][] : memref<?xi8> to memref<64xf32>
// CHECK:         linalg.generic {{.*}} outs(%[[A]] : memref<64xf32>)
// CHECK:           math.exp
// CHECK:         linalg.reduce ins(%[[A]] : memref<64xf32>)
// CHECK:         linalg.generic {{.*}} outs(%[[A]] : memref<64xf32>)
// CHECK:           math.tanh
// CHECK:         linalg.reduce ins(%[[A]] : memref<64xf32>)
// CHECK-NOT:     memref.dealloc
// CHECK:         return{{$}}
#id = affine_map<(d0) -> (d0)>
func.func @freed_after_last_use(%x: tensor<64xf32>) -> tensor<f32> {
  %e = tensor.empty() : tensor<64xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  %z = arith.constant 0.0 : f32
  %se = tensor.empty() : tensor<f32>
  %s0 = linalg.fill ins(%z : f32) outs(%se : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%a : tensor<64xf32>) outs(%s0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %in, %acc : f32
      linalg.yield %0 : f32
    }
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.tanh %in : f32
    linalg.yield %0 : f32
  } -> tensor<64xf32>
  %t0 = linalg.fill ins(%z : f32) outs(%se : tensor<f32>) -> tensor<f32>
  %t = linalg.reduce ins(%b : tensor<64xf32>) outs(%s : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %in, %acc : f32
      linalg.yield %0 : f32
    }
  return %t : tensor<f32>
}
