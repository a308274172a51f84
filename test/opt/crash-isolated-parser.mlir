// RUN: not lowerline-opt %s 2>&1 | FileCheck %s

// MLIR's parser asserts ("attributes may never be null") on a dense i64
// array element that does not fit in 64 bits: the driver reports it at the
// input, exit status 1 (issue 20; found by test_fuzz_mutations.py).
// CHECK-NOT: Traceback
// CHECK:     crash-isolated-parser.mlir:[[@LINE+1]]:1: error: lowerline-opt crashed (SIGABRT) while parsing it
func.func @reduce(%x: tensor<4xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.reduce ins(%x : tensor<4xf32>) outs(%init : tensor<f32>) dimensions = [99999999999999999999]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %in, %acc : f32
      linalg.yield %0 : f32
    }
  return %r : tensor<f32>
}
