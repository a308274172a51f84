// RUN: lowerline-opt %s --split-input-file --pass-pipeline="builtin.module(lowerline-to-graph)" \
// RUN:   | FileCheck %s --check-prefix=GRAPH
// RUN: lowerline-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(lowerline-to-graph,lowerline-to-bufferized,lowerline-to-loops)" \
// RUN:   | FileCheck %s --check-prefix=LOOPS
// RUN: lowerline-opt %s --split-input-file --pass-pipeline="builtin.module(lowerline-cpu-pipeline)" \
// RUN:   | FileCheck %s --check-prefix=LLVM

// A named pipeline is usable as a pass name: lowerline-to-graph fuses the two
// elementwise generics; the later stages take them to loops, then to LLVM.
// GRAPH-LABEL: func.func @fuse_elementwise_chain(
// GRAPH:         linalg.generic
// GRAPH:           arith.addf
// GRAPH:           arith.mulf
// GRAPH-NOT:     linalg.generic
// GRAPH:         return
// LOOPS-LABEL: func.func @fuse_elementwise_chain(
// LOOPS-NOT:     linalg.generic
// LOOPS:         scf.for
// LOOPS:           memref.load
// LOOPS:           arith.addf
// LOOPS:           arith.mulf
// LOOPS:           memref.store
// LOOPS-NOT:     tensor<
// LLVM-LABEL:  llvm.func @fuse_elementwise_chain(
// LLVM:          llvm.fadd
// LLVM:          llvm.fmul
// LLVM-NOT:      func.func
// LLVM-NOT:      linalg.
#id = affine_map<(d0) -> (d0)>
func.func @fuse_elementwise_chain(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%0 : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
