// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm{widen-i1=true})" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE

// Only the LLVM dialect is left.
// NONE-NOT: func.func
// NONE-NOT: memref.
// NONE-NOT: scf.
// NONE-NOT: cf.
// NONE-NOT: arith.
// NONE-NOT: math.
// NONE-NOT: affine.
// NONE-NOT: unrealized_conversion_cast
// No boolean is loaded or stored as i1.
// NONE-NOT: : i1, !llvm.ptr
// NONE-NOT: -> i1

// Input: the loops stage's output (lowerline-to-loops).

// The function and a `_mlir_ciface_` wrapper taking one descriptor pointer per
// memref, which calls it.
// CHECK-LABEL: llvm.func @matmul_bias_relu(
// CHECK-SAME:      attributes {llvm.emit_c_interface}
// CHECK:         llvm.fmul
// CHECK:         llvm.fadd
// CHECK:         llvm.intr.maximum
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_matmul_bias_relu(
// CHECK-SAME:      %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr)
// CHECK:         llvm.call @matmul_bias_relu(
// CHECK:         llvm.return
func.func @matmul_bias_relu(%arg0: memref<16x32xf32>, %arg1: memref<32x8xf32>, %arg2: memref<8xf32>, %arg3: memref<16x8xf32>) {
  %c32 = arith.constant 32 : index
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %arg4 = %c0 to %c16 step %c1 {
    scf.for %arg5 = %c0 to %c8 step %c1 {
      memref.store %cst, %arg3[%arg4, %arg5] : memref<16x8xf32>
    }
  }
  scf.for %arg4 = %c0 to %c16 step %c1 {
    scf.for %arg5 = %c0 to %c8 step %c1 {
      scf.for %arg6 = %c0 to %c32 step %c1 {
        %0 = memref.load %arg0[%arg4, %arg6] : memref<16x32xf32>
        %1 = memref.load %arg1[%arg6, %arg5] : memref<32x8xf32>
        %2 = memref.load %arg3[%arg4, %arg5] : memref<16x8xf32>
        %3 = arith.mulf %0, %1 : f32
        %4 = arith.addf %2, %3 : f32
        memref.store %4, %arg3[%arg4, %arg5] : memref<16x8xf32>
      }
    }
  }
  scf.for %arg4 = %c0 to %c16 step %c1 {
    scf.for %arg5 = %c0 to %c8 step %c1 {
      %0 = memref.load %arg3[%arg4, %arg5] : memref<16x8xf32>
      %1 = memref.load %arg2[%arg5] : memref<8xf32>
      %2 = arith.addf %0, %1 : f32
      %3 = arith.maximumf %2, %cst : f32
      memref.store %3, %arg3[%arg4, %arg5] : memref<16x8xf32>
    }
  }
  return
}

// -----

// tan becomes an LLVM intrinsic (the backend calls libm for it); f32 exp is
// expanded inline (lowerline-approximate-exp), NaN passed through.
// CHECK-LABEL: llvm.func @elementwise(
// CHECK:         %[[X:.+]] = llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK:         %[[Y:.+]] = llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK:         %[[T:.+]] = llvm.intr.tan(%[[Y]]) : (f32) -> f32
// CHECK-NOT:     llvm.intr.exp
// CHECK:         llvm.intr.floor
// CHECK:         %[[NAN:.+]] = llvm.fcmp "uno" %[[X]], %[[X]] : f32
// CHECK:         %[[E:.+]] = llvm.select %[[NAN]], %[[X]], %{{.+}} : i1, f32
// CHECK:         %[[M:.+]] = llvm.fmul %[[E]], %[[T]] : f32
// CHECK:         %[[C:.+]] = llvm.fcmp "ogt" %[[M]], %[[X]] : f32
// CHECK:         %[[S:.+]] = llvm.select %[[C]], %[[M]], %[[X]] : i1, f32
// CHECK:         llvm.store %[[S]], %{{.+}} : f32, !llvm.ptr
// CHECK-LABEL: llvm.func @_mlir_ciface_elementwise(
// CHECK:         llvm.call @elementwise(
func.func @elementwise(%arg0: memref<7x13xf32>, %arg1: memref<7x13xf32>, %arg2: memref<7x13xf32>) {
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  scf.for %arg3 = %c0 to %c7 step %c1 {
    scf.for %arg4 = %c0 to %c13 step %c1 {
      %0 = memref.load %arg0[%arg3, %arg4] : memref<7x13xf32>
      %1 = memref.load %arg1[%arg3, %arg4] : memref<7x13xf32>
      %2 = math.tan %1 : f32
      %3 = math.exp %0 : f32
      %4 = arith.mulf %3, %2 : f32
      %5 = arith.cmpf ogt, %4, %0 : f32
      %6 = arith.select %5, %4, %0 : f32
      memref.store %6, %arg2[%arg3, %arg4] : memref<7x13xf32>
    }
  }
  return
}

// -----

// lowerline-widen-i1-memrefs: the comparison is zero-extended and stored as a
// byte at a byte-strided address (finalize-memref-to-llvm would abort on i1).
// CHECK-LABEL: llvm.func @compare_to_mask(
// CHECK:         %[[C:.+]] = llvm.fcmp "olt" %{{.+}}, %{{.+}} : f32
// CHECK:         %[[B:.+]] = llvm.zext %[[C]] : i1 to i8
// CHECK:         %[[P:.+]] = llvm.getelementptr inbounds|nuw %{{.+}}[%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         llvm.store %[[B]], %[[P]] : i8, !llvm.ptr
// CHECK-LABEL: llvm.func @_mlir_ciface_compare_to_mask(
func.func @compare_to_mask(%arg0: memref<7x13xf32>, %arg1: memref<7x13xf32>, %arg2: memref<7x13xi1>) {
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  scf.for %arg3 = %c0 to %c7 step %c1 {
    scf.for %arg4 = %c0 to %c13 step %c1 {
      %0 = memref.load %arg0[%arg3, %arg4] : memref<7x13xf32>
      %1 = memref.load %arg1[%arg3, %arg4] : memref<7x13xf32>
      %2 = arith.cmpf olt, %0, %1 : f32
      memref.store %2, %arg2[%arg3, %arg4] : memref<7x13xi1>
    }
  }
  return
}

// -----

// A boolean input (torch.where's condition) is read as a byte and truncated.
// CHECK-LABEL: llvm.func @where(
// CHECK:         %[[P:.+]] = llvm.getelementptr inbounds|nuw %{{.+}}[%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         %[[B:.+]] = llvm.load %[[P]] : !llvm.ptr -> i8
// CHECK:         %[[C:.+]] = llvm.trunc %[[B]] : i8 to i1
// CHECK:         llvm.select %[[C]], %{{.+}}, %{{.+}} : i1, f32
func.func @where(%arg0: memref<7x13xi1>, %arg1: memref<7x13xf32>, %arg2: memref<7x13xf32>, %arg3: memref<7x13xf32>) {
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  scf.for %arg4 = %c0 to %c7 step %c1 {
    scf.for %arg5 = %c0 to %c13 step %c1 {
      %0 = memref.load %arg0[%arg4, %arg5] : memref<7x13xi1>
      %1 = memref.load %arg1[%arg4, %arg5] : memref<7x13xf32>
      %2 = memref.load %arg2[%arg4, %arg5] : memref<7x13xf32>
      %3 = arith.select %0, %1, %2 : f32
      memref.store %3, %arg3[%arg4, %arg5] : memref<7x13xf32>
    }
  }
  return
}

// -----

// Truncations to bf16 are integer ops (lowerline-expand-bf16-truncf): no
// fptrunc to bfloat is left for LLVM, which would call __truncdfbf2 (missing
// from libgcc 12) or flush subnormals with vcvtneps2bf16. f64 goes through
// f32 first.
// CHECK-LABEL: llvm.func @truncates_to_bf16(
// CHECK-NOT:     llvm.fptrunc {{.+}} to bf16
// CHECK:         llvm.fptrunc %{{.+}} : f64 to f32
// CHECK-NOT:     llvm.fptrunc {{.+}} to bf16
// CHECK:         %[[A:.+]] = llvm.bitcast %{{.+}} : i16 to bf16
// CHECK-NOT:     llvm.fptrunc {{.+}} to bf16
// CHECK:         %[[B:.+]] = llvm.bitcast %{{.+}} : i16 to bf16
// CHECK:         llvm.store %[[A]], %{{.+}} : bf16, !llvm.ptr
// CHECK:         llvm.store %[[B]], %{{.+}} : bf16, !llvm.ptr
func.func @truncates_to_bf16(%d: memref<5xf64>, %s: memref<5xf32>, %out0: memref<5xbf16>, %out1: memref<5xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  scf.for %i = %c0 to %c5 step %c1 {
    %x = memref.load %d[%i] : memref<5xf64>
    %y = memref.load %s[%i] : memref<5xf32>
    %a = arith.truncf %x : f64 to bf16
    %b = arith.truncf %y : f32 to bf16
    memref.store %a, %out0[%i] : memref<5xbf16>
    memref.store %b, %out1[%i] : memref<5xbf16>
  }
  return
}
