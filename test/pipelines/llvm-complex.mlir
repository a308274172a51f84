// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE

// Complex functions (exp, log, abs, angle) and arithmetic reach the LLVM
// dialect through convert-complex-to-standard: no complex op is left.
// NONE-NOT: complex.

// complex.exp is e^re * (cos im, sin im); its parts come back as an LLVM struct.
// CHECK-LABEL: llvm.func @complex_functions(
// CHECK:         llvm.intr.exp
// CHECK:         llvm.intr.cos
// CHECK:         llvm.intr.sin
// CHECK:         llvm.return
func.func @complex_functions(%a: f64, %b: f64) -> (f64, f64) {
  %z = complex.create %a, %b : complex<f64>
  %e = complex.exp %z : complex<f64>
  %l = complex.log %e : complex<f64>
  %m = complex.abs %l : complex<f64>
  %p = complex.angle %e : complex<f64>
  %d = complex.div %e, %z : complex<f64>
  %q = complex.mul %d, %z : complex<f64>
  %r = complex.re %q : complex<f64>
  %s = arith.addf %r, %m : f64
  return %s, %p : f64, f64
}

// -----

// Complex values in memory: loads and stores of complex<f32> are of LLVM structs.
// CHECK-LABEL: llvm.func @complex_buffers(
// CHECK:         llvm.load %{{.+}} : !llvm.ptr -> !llvm.struct<(f32, f32)>
// CHECK:         llvm.store %{{.+}}, %{{.+}} : !llvm.struct<(f32, f32)>, !llvm.ptr
func.func @complex_buffers(%in: memref<4xcomplex<f32>>, %out: memref<4xcomplex<f32>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %z = memref.load %in[%i] : memref<4xcomplex<f32>>
    %w = complex.mul %z, %z : complex<f32>
    memref.store %w, %out[%i] : memref<4xcomplex<f32>>
  }
  return
}
