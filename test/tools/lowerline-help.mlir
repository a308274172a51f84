// RUN: lowerline --help | FileCheck %s
// RUN: lowerline pipeline | FileCheck %s --check-prefix=PIPE

// The CLI says what it does so far.
// CHECK: lowerline lowers ML programs step by step through upstream MLIR dialects
// CHECK: lowerline run FILE.mlir
// CHECK: lowerline pipeline

// Every CPU stage prints as a pipeline lowerline-opt accepts.
// PIPE: graph: builtin.module(
// PIPE-NEXT: tiled: builtin.module({{.*}}lowerline-tile-and-fuse{target=host}{{.*}}lowerline-vectorize
// PIPE-NEXT: bufferized: builtin.module(func.func(lowerline-split-empty-tensors),one-shot-bufferize{{.*}},func.func(optimize-allocation-liveness),lowerline-plan-arena{threads={{[0-9]+}}},
// PIPE-NEXT: loops: builtin.module(
// PIPE-NEXT: llvm: builtin.module(lowerline-widen-i1-memrefs,{{.*}}finalize-memref-to-llvm{use-generic-functions=true}
