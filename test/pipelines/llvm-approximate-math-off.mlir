// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" \
// RUN:   | FileCheck %s --check-prefix=ON
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm{approximate-math=false})" \
// RUN:   | FileCheck %s --check-prefix=OFF

// lowerline-to-llvm{approximate-math=false} (bisection's reference path)
// leaves f32 exp and tanh to LLVM's intrinsics (libm calls in the object); by default they are
// lowerline's vector polynomials, with no call.
// ON-LABEL:  llvm.func @exp_tanh(
// ON-NOT:      llvm.intr.exp
// ON-NOT:      llvm.intr.tanh
// ON:          llvm.return
// OFF-LABEL: llvm.func @exp_tanh(
// OFF:         llvm.intr.exp
// OFF:         llvm.intr.tanh
// OFF:         llvm.return
func.func @exp_tanh(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  %1 = math.tanh %0 : f32
  return %1 : f32
}
