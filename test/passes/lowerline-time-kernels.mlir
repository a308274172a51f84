// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-time-kernels)" \
// RUN:   --split-input-file | FileCheck %s
// Explorer builds run it in the loops stage; normal builds do not:
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-loops{time-kernels=true num-threads=2})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=EXPLORE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-loops{num-threads=2})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NORMAL

// Each top-level kernel (a parallel nest, a loop, a linalg op) is bracketed
// by the clock and the done call with its number; ops inside are not.
// CHECK-LABEL: func.func @two_kernels(
// CHECK:         %[[T0:.+]] = llvm.call @lowerline_kernel_clock() : () -> i64
// CHECK-NEXT:    scf.forall
// CHECK-NOT:       call @lowerline_kernel
// CHECK:         }
// CHECK-NEXT:    %[[K0:.+]] = arith.constant 0 : i64
// CHECK-NEXT:    llvm.call @lowerline_kernel_done(%[[K0]], %[[T0]])
// CHECK-NEXT:    %[[T1:.+]] = llvm.call @lowerline_kernel_clock() : () -> i64
// CHECK-NEXT:    linalg.copy
// CHECK-NEXT:    %[[K1:.+]] = arith.constant 1 : i64
// CHECK-NEXT:    llvm.call @lowerline_kernel_done(%[[K1]], %[[T1]])
// CHECK-NEXT:    return
// CHECK-DAG:   llvm.func @lowerline_kernel_clock() -> i64
// CHECK-DAG:   llvm.func @lowerline_kernel_done(i64, i64)
// EXPLORE-LABEL: func.func @two_kernels(
// EXPLORE:         llvm.call @lowerline_kernel_clock()
// EXPLORE:         omp.parallel
// EXPLORE:         llvm.call @lowerline_kernel_done
// NORMAL-LABEL: func.func @two_kernels(
// NORMAL-NOT:     lowerline_kernel
// NORMAL:         return
func.func @two_kernels(%a: memref<8x16xf32>, %b: memref<8x16xf32>, %c: memref<8x16xf32>) {
  scf.forall (%i, %j) in (8, 16) {
    %x = memref.load %a[%i, %j] : memref<8x16xf32>
    %y = arith.mulf %x, %x : f32
    memref.store %y, %b[%i, %j] : memref<8x16xf32>
  }
  linalg.copy ins(%b : memref<8x16xf32>) outs(%c : memref<8x16xf32>)
  return
}

// -----

// A private function is called from inside a kernel (whose time holds it):
// its loops are not kernels.
// CHECK-LABEL: func.func private @helper(
// CHECK-NOT:     lowerline_kernel
// CHECK:         return
func.func private @helper(%a: memref<4xf32>) {
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%a : memref<4xf32>)
  return
}

// -----

// A function with no loop nest has no kernel: nothing is declared or called.
// CHECK-LABEL: func.func @no_kernel(
// CHECK-NOT:     lowerline_kernel
// CHECK:         return
func.func @no_kernel(%a: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<4xf32>
  return %x : f32
}
