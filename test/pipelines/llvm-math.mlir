// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-llvm)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE

// Every math op reaches the LLVM dialect, and only as something that links:
// an LLVM intrinsic, a libm function, or an outlined software version.
// NONE-NOT: math.
// libm has no rsqrtf; convert-math-to-libm alone would call it.
// NONE-NOT: @rsqrtf

// Ops with an LLVM intrinsic become the intrinsic; rsqrt is 1 / sqrt.
// CHECK-LABEL: llvm.func @intrinsics(
// CHECK-SAME:      %[[X:[^:]+]]: f32
// CHECK:         %[[S:.+]] = llvm.intr.sqrt(%[[X]]) : (f32) -> f32
// CHECK:         %[[A:.+]] = llvm.intr.fabs(%[[S]]) : (f32) -> f32
// CHECK:         %[[R:.+]] = llvm.intr.sqrt(%[[A]]) : (f32) -> f32
// CHECK:         llvm.fdiv %{{.+}}, %[[R]] : f32
// CHECK:         llvm.return
func.func @intrinsics(%x: f32) -> f32 {
  %0 = math.sqrt %x : f32
  %1 = math.absf %0 : f32
  %2 = math.rsqrt %1 : f32
  return %2 : f32
}

// -----

// Ops without one call libm (f64 here; f32 erf and log1p are expanded, below).
// log1p keeps its accuracy near 0: log1p, not log(1 + x).
// CHECK-DAG:   llvm.func @erf(f64) -> f64
// CHECK-DAG:   llvm.func @log1p(f64) -> f64
// CHECK-LABEL: llvm.func @libm_calls(
// CHECK-SAME:      %[[X:[^:]+]]: f64
// CHECK:         %[[E:.+]] = llvm.call @erf(%[[X]]) : (f64) -> f64
// CHECK:         %[[L:.+]] = llvm.call @log1p(%[[E]]) : (f64) -> f64
// CHECK:         llvm.return %[[L]]
func.func @libm_calls(%x: f64) -> f64 {
  %0 = math.erf %x : f64
  %1 = math.log1p %0 : f64
  return %1 : f64
}

// -----

// f32 tanh, erf, log and log1p become polynomials in vector registers
// (lowerline-approximate-math): no libm call is left.
// CHECK-LABEL: llvm.func @f32_polynomials(
// CHECK-NOT:     llvm.call
// CHECK-NOT:     llvm.intr.tanh
// CHECK-NOT:     llvm.intr.log
// CHECK:         llvm.intr.fma(%{{.+}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:     llvm.call
// CHECK:         llvm.return
func.func @f32_polynomials(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.tanh %x : vector<8xf32>
  %1 = math.erf %0 : vector<8xf32>
  %2 = math.log %1 : vector<8xf32>
  %3 = math.log1p %2 : vector<8xf32>
  return %3 : vector<8xf32>
}

// -----

// Integer powers have neither: they call outlined software versions, which
// get no C wrapper of their own.
// CHECK-LABEL: llvm.func @integer_powers(
// CHECK:         llvm.call @__mlir_math_fpowi_f32_i32(
// CHECK:         llvm.call @__mlir_math_ipowi_i32(
// CHECK-LABEL: llvm.func @_mlir_ciface_integer_powers(
// CHECK:       llvm.func linkonce_odr @__mlir_math_fpowi_f32_i32(
// CHECK-SAME:      attributes {sym_visibility = "private"} {
// CHECK:       llvm.func linkonce_odr @__mlir_math_ipowi_i32(
// CHECK-NOT:   @_mlir_ciface___mlir_math
func.func @integer_powers(%x: f32, %i: i32, %j: i32) -> (f32, i32) {
  %0 = math.fpowi %x, %i : f32, i32
  %1 = math.ipowi %i, %j : i32
  return %0, %1 : f32, i32
}
