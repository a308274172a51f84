// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-require-llvm-dialect)" \
// RUN:   --split-input-file --verify-diagnostics

// Each op name left by the lowering is named once, at its first place, with its count.
llvm.func @complex_ops_left(%a: f64, %b: f64) -> f64 {
  // expected-error@+1 {{'complex.create' (1 in the module) was not lowered to the LLVM dialect}}
  %z = complex.create %a, %b : complex<f64>
  // expected-error@+1 {{'complex.exp' (2 in the module) was not lowered to the LLVM dialect}}
  %e = complex.exp %z : complex<f64>
  %f = complex.exp %e : complex<f64>
  // expected-error@+1 {{'complex.re' (1 in the module) was not lowered to the LLVM dialect}}
  %r = complex.re %f : complex<f64>
  llvm.return %r : f64
}
