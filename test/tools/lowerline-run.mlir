// RUN: lowerline run %s --seed 3 | FileCheck %s
// RUN: rm -rf %t.dump
// RUN: lowerline run %s --seed 3 --dump-dir %t.dump > /dev/null
// RUN: FileCheck %s --check-prefix=LINALG < %t.dump/0-linalg.mlir
// RUN: FileCheck %s --check-prefix=BUF < %t.dump/3-bufferized.mlir
// RUN: FileCheck %s --check-prefix=LLVM < %t.dump/5-llvm.mlir

// `lowerline run` lowers the function through every CPU stage, runs it on
// seeded random inputs and prints them with the results; --dump-dir writes
// each stage's IR.

// CHECK: @scale_shift: lowered to LLVM and ran on the CPU (graph {{.*}}, bufferized {{.*}}, loops {{.*}}, llvm {{.*}}, jit {{.*}})
// CHECK: input #0 (random, seed 3): float32[2, 3]
// CHECK: result #0: float32[2, 3]

// LINALG: linalg.generic
// BUF: func.func @scale_shift(%{{.*}}: memref<2x3xf32>, %{{.*}}: memref<2x3xf32>, %{{.*}}: memref<?xi8>) attributes {lowerline.arena = array<i64:
// LLVM: llvm.func @_mlir_ciface_scale_shift
#id = affine_map<(i, j) -> (i, j)>
func.func @scale_shift(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %two : f32
    %s = arith.addf %m, %one : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
