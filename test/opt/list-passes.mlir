// RUN: lowerline-opt --list-passes | FileCheck %s

// --list-passes names every lowerline pass and named pipeline, where each runs,
// and its options with their type and default (as written in pipeline text).
// CHECK-LABEL: lowerline passes:
// CHECK:         lowerline-widen-i1-memrefs  (runs on: any op)
// CHECK-NEXT:      Store i1 memrefs as i8
// CHECK-LABEL: lowerline pipelines (usable as pass names):
// CHECK-DAG:     lowerline-to-graph  (runs on: builtin.module)
// CHECK-DAG:     lowerline-to-tiled  (runs on: builtin.module)
// CHECK-DAG:     lowerline-to-bufferized  (runs on: builtin.module)
// CHECK-DAG:     lowerline-to-loops  (runs on: builtin.module)
// CHECK-DAG:     lowerline-to-llvm  (runs on: builtin.module)
// CHECK-DAG:     lowerline-cpu-pipeline  (runs on: builtin.module)

// The options are listed under the pipelines that read them.
// RUN: lowerline-opt --list-passes | FileCheck %s --check-prefix=OPTS
// OPTS:        lowerline-cpu-pipeline  (runs on: builtin.module)
// OPTS-NEXT:     linalg on tensors -> LLVM dialect
// OPTS-NEXT:     target=<str>  (default: host)  CPU the code is for
// OPTS-NEXT:     tile=<bool>  (default: true)  run the tiled stage
// OPTS-NEXT:     num-threads=<int>  (default: 0)  threads the code may use
// OPTS-NEXT:     parallel=<str>  (default: openmp)
// OPTS-NEXT:     buffer-reuse=<bool>  (default: true)  bufferized stage:
// OPTS-NEXT:     arena=<bool>  (default: true)  bufferized stage:
// OPTS-NEXT:     winograd=<bool>  (default: true)  tiled stage: 3x3 stride-1 convolutions
// OPTS-NEXT:     conv-channel-vectors=<bool>  (default: true)  tiled stage: f32 convolutions whose output rows
// OPTS-NEXT:     split-strided-columns=<bool>  (default: true)  tiled stage: a convolution strided along the row
// OPTS-NEXT:     time-kernels=<bool>  (default: false)  loops stage: bracket each top-level kernel
// OPTS-NEXT:     approximate-math=<bool>  (default: true)  llvm stage: f32 exp, tanh, erf
// OPTS-NEXT:     widen-i1=<bool>  (default: true)  run lowerline-widen-i1-memrefs before finalize-memref-to-llvm
// OPTS:        lowerline-to-bufferized  (runs on: builtin.module)
// OPTS-NEXT:     graph -> bufferized
// OPTS-NEXT:     target=<str>  (default: host)
// OPTS-NEXT:     num-threads=<int>  (default: 0)
// OPTS-NEXT:     parallel=<str>  (default: openmp)
// OPTS-NEXT:     buffer-reuse=<bool>  (default: true)
// OPTS-NEXT:     arena=<bool>  (default: true)
// OPTS:        lowerline-to-graph  (runs on: builtin.module)
// OPTS-NEXT:     linalg on tensors -> graph
// OPTS-NOT:      widen-i1=
// OPTS:        lowerline-to-llvm  (runs on: builtin.module)
// OPTS-NEXT:     loops -> LLVM dialect
// OPTS-NEXT:     approximate-math=<bool>  (default: true)
// OPTS-NEXT:     widen-i1=<bool>  (default: true)
