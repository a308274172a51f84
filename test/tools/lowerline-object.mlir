// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline)" -o %t.llvm.mlir
// RUN: lowerline object %t.llvm.mlir -o %t.o --shared %t.so | FileCheck %s --check-prefix=WROTE
// RUN: llvm-nm --defined-only %t.so | FileCheck %s
// RUN: not lowerline object %S/Inputs/malformed.mlir -o %t.bad.o 2>&1 | FileCheck %s --check-prefix=BAD

// `lowerline object` replays the compile worker's object step (code generation
// for the --target CPU, by default the host, and linking) on LLVM-dialect IR:
// the reproducer command of a CompileError in stage 'object'.
// WROTE: wrote {{.*}}.o and {{.*}}.so
// CHECK: T _mlir_ciface_double
// BAD: lowerline: error: cannot parse {{.*}}malformed.mlir
// BAD-NOT: Traceback

func.func @double(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = tensor.empty() : tensor<3xf32>
  %r = linalg.add ins(%x, %x : tensor<3xf32>, tensor<3xf32>) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}
