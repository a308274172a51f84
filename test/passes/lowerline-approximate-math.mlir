// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-approximate-math)" \
// RUN:   --split-input-file | FileCheck %s

// A vector tanh becomes an odd polynomial near 0 and 1 - 2 / (exp(2|x|) + 1)
// (the exp expanded inline) beyond, chosen by a select; the sign is copied.
// CHECK-LABEL: func.func @expands_vector_tanh(
// CHECK-SAME:      %[[X:[^:]+]]: vector<16xf32>)
// CHECK-NOT:     math.tanh
// CHECK-NOT:     math.exp
// CHECK:         math.fma
// CHECK:         math.floor %{{.+}} : vector<16xf32>
// CHECK:         arith.divf
// CHECK:         %[[S:.+]] = arith.select %{{.+}} : vector<16xi1>, vector<16xf32>
// CHECK:         %[[R:.+]] = math.copysign %[[S]], %[[X]] : vector<16xf32>
// CHECK-NOT:     math.tanh
// CHECK:         return %[[R]]
func.func @expands_vector_tanh(%x: vector<16xf32>) -> vector<16xf32> {
  %r = math.tanh %x : vector<16xf32>
  return %r : vector<16xf32>
}

// -----

// erf: a polynomial below 1, 1 - exp(-x^2) R(|x|) above (x^2 split by an fma).
// CHECK-LABEL: func.func @expands_vector_erf(
// CHECK-SAME:      %[[X:[^:]+]]: vector<8xf32>)
// CHECK-NOT:     math.erf
// CHECK:         %[[A:.+]] = arith.minimumf
// CHECK:         %[[SQ:.+]] = arith.mulf %[[A]], %[[A]] : vector<8xf32>
// CHECK:         %[[NSQ:.+]] = arith.negf %[[SQ]]
// CHECK:         math.fma %[[A]], %[[A]], %[[NSQ]] : vector<8xf32>
// CHECK:         math.floor
// CHECK:         %[[R:.+]] = math.copysign %{{.+}}, %[[X]] : vector<8xf32>
// CHECK-NOT:     math.erf
// CHECK:         return %[[R]]
func.func @expands_vector_erf(%x: vector<8xf32>) -> vector<8xf32> {
  %r = math.erf %x : vector<8xf32>
  return %r : vector<8xf32>
}

// -----

// erfc: 1 - erf's polynomial below 3/4 and exp(-x^2) P(q) / (1 + 2|x|) above,
// its exp and product in f64 lanes, rounded once; 2 - that below 0.
// CHECK-LABEL: func.func @expands_vector_erfc(
// CHECK-SAME:      %[[X:[^:]+]]: vector<8xf32>)
// CHECK-NOT:     math.erfc
// CHECK:         %[[A:.+]] = math.absf %[[X]] : vector<8xf32>
// CHECK:         arith.divf
// CHECK:         %[[W:.+]] = arith.extf %[[A]] : vector<8xf32> to vector<8xf64>
// CHECK:         arith.mulf %[[W]], %[[W]] : vector<8xf64>
// CHECK:         arith.truncf %{{.+}} : vector<8xf64> to vector<8xf32>
// CHECK:         arith.cmpf olt, %[[X]]
// CHECK:         %[[N:.+]] = arith.cmpf uno, %[[X]], %[[X]]
// CHECK:         %[[R:.+]] = arith.select %[[N]], %[[X]], %{{.+}} : vector<8xi1>, vector<8xf32>
// CHECK-NOT:     math.erfc
// CHECK:         return %[[R]]
func.func @expands_vector_erfc(%x: vector<8xf32>) -> vector<8xf32> {
  %r = math.erfc %x : vector<8xf32>
  return %r : vector<8xf32>
}

// -----

// f64 erfc is left to libm.
// CHECK-LABEL: func.func @keeps_f64_erfc(
// CHECK:         math.erfc %{{.+}} : f64
func.func @keeps_f64_erfc(%x: f64) -> f64 {
  %r = math.erfc %x : f64
  return %r : f64
}

// -----

// log: the exponent and mantissa split in integer bits (subnormals scaled
// first), then -inf at 0, NaN below 0, x itself at +inf and NaN.
// CHECK-LABEL: func.func @expands_scalar_log(
// CHECK-SAME:      %[[X:[^:]+]]: f32)
// CHECK-NOT:     math.log
// CHECK:         arith.bitcast %{{.+}} : f32 to i32
// CHECK:         arith.shrsi
// CHECK:         arith.divf
// CHECK:         arith.cmpf oeq, %[[X]]
// CHECK:         arith.cmpf olt, %[[X]]
// CHECK:         %[[INF:.+]] = arith.cmpf ueq, %[[X]]
// CHECK:         %[[R:.+]] = arith.select %[[INF]], %[[X]], %{{.+}} : f32
// CHECK-NOT:     math.log
// CHECK:         return %[[R]]
func.func @expands_scalar_log(%x: f32) -> f32 {
  %r = math.log %x : f32
  return %r : f32
}

// -----

// log1p reduces 1 + x and adds back the rounding error of the sum; below
// 2^-24 the result is x itself.
// CHECK-LABEL: func.func @expands_vector_log1p(
// CHECK-SAME:      %[[X:[^:]+]]: vector<4xf32>)
// CHECK-NOT:     math.log1p
// CHECK:         %[[U:.+]] = arith.addf %{{.+}}, %[[X]] : vector<4xf32>
// CHECK:         arith.bitcast %[[U]] : vector<4xf32> to vector<4xi32>
// CHECK:         arith.cmpi sge
// CHECK:         %[[ABS:.+]] = math.absf %[[X]]
// CHECK:         %[[TINY:.+]] = arith.cmpf olt, %[[ABS]]
// CHECK:         %[[R:.+]] = arith.select %[[TINY]], %[[X]], %{{.+}} : vector<4xi1>, vector<4xf32>
// CHECK-NOT:     math.log1p
// CHECK:         return %[[R]]
func.func @expands_vector_log1p(%x: vector<4xf32>) -> vector<4xf32> {
  %r = math.log1p %x : vector<4xf32>
  return %r : vector<4xf32>
}

// -----

// expm1: fma(2^n, p, 2^n - 1) with n clamped to 127 and the rest applied
// after (overflow to inf); x itself below 2^-25.
// CHECK-LABEL: func.func @expands_vector_expm1(
// CHECK-SAME:      %[[X:[^:]+]]: vector<8xf32>)
// CHECK-NOT:     math.expm1
// CHECK:         math.roundeven
// CHECK:         arith.minsi
// CHECK:         %[[ABS:.+]] = math.absf %[[X]]
// CHECK:         %[[TINY:.+]] = arith.cmpf ult, %[[ABS]]
// CHECK:         %[[R:.+]] = arith.select %[[TINY]], %[[X]], %{{.+}} : vector<8xi1>, vector<8xf32>
// CHECK-NOT:     math.expm1
// CHECK:         return %[[R]]
func.func @expands_vector_expm1(%x: vector<8xf32>) -> vector<8xf32> {
  %r = math.expm1 %x : vector<8xf32>
  return %r : vector<8xf32>
}

// -----

// log2: log's reduction, then (f - f^2/2) cut to 12 bits times the high part
// of 1/ln2 (exact), plus the exponent.
// CHECK-LABEL: func.func @expands_scalar_log2(
// CHECK-SAME:      %[[X:[^:]+]]: f32)
// CHECK-NOT:     math.log2
// CHECK:         arith.andi %{{.+}}, %{{.+}} : i32
// CHECK:         arith.sitofp
// CHECK:         %[[INF:.+]] = arith.cmpf ueq, %[[X]]
// CHECK:         %[[R:.+]] = arith.select %[[INF]], %[[X]], %{{.+}} : f32
// CHECK-NOT:     math.log2
// CHECK:         return %[[R]]
func.func @expands_scalar_log2(%x: f32) -> f32 {
  %r = math.log2 %x : f32
  return %r : f32
}

// -----

// torch.exp2 arrives as powf of the constant 2: 2^round(x) 2^r, NaN passed.
// CHECK-LABEL: func.func @expands_powf_of_two(
// CHECK-SAME:      %[[X:[^:]+]]: vector<4xf32>)
// CHECK-NOT:     math.powf
// CHECK:         math.roundeven
// CHECK:         arith.shli
// CHECK:         %[[NAN:.+]] = arith.cmpf uno, %[[X]], %[[X]]
// CHECK:         %[[R:.+]] = arith.select %[[NAN]], %[[X]], %{{.+}}
// CHECK-NOT:     math.powf
// CHECK:         return %[[R]]
func.func @expands_powf_of_two(%x: vector<4xf32>) -> vector<4xf32> {
  %two = arith.constant dense<2.0> : vector<4xf32>
  %r = math.powf %two, %x : vector<4xf32>
  return %r : vector<4xf32>
}

// -----

// sin: reduced and evaluated in f64 lanes; only when some lane is too large
// for that reduction does an scf.if recompute the lanes with f64 libm sin.
// CHECK-LABEL: func.func @expands_vector_sin(
// CHECK-SAME:      %[[X:[^:]+]]: vector<2xf32>)
// CHECK:         arith.extf %{{.+}} : vector<2xf32> to vector<2xf64>
// CHECK:         math.roundeven %{{.+}} : vector<2xf64>
// CHECK:         arith.truncf %{{.+}} : vector<2xf64> to vector<2xf32>
// CHECK:         %[[ANY:.+]] = vector.reduction <or>
// CHECK:         %[[R:.+]] = scf.if %[[ANY]] -> (vector<2xf32>)
// CHECK-COUNT-2:   math.sin %{{.+}} : f64
// CHECK:         } else {
// CHECK-NOT:     math.sin %{{.+}} : f32
// CHECK:         return %[[R]]
func.func @expands_vector_sin(%x: vector<2xf32>) -> vector<2xf32> {
  %r = math.sin %x : vector<2xf32>
  return %r : vector<2xf32>
}

// -----

// cos of a scalar: the same, the fallback a single f64 libm cos.
// CHECK-LABEL: func.func @expands_scalar_cos(
// CHECK:         arith.extf %{{.+}} : f32 to f64
// CHECK:         %[[R:.+]] = scf.if %{{.+}} -> (f32)
// CHECK:           math.cos %{{.+}} : f64
// CHECK:         return %[[R]]
func.func @expands_scalar_cos(%x: f32) -> f32 {
  %r = math.cos %x : f32
  return %r : f32
}

// -----

// atan: in f64 lanes, Cephes's reduction chosen by selects, rounded once to
// f32 and the sign of x copied (-0 stays -0).
// CHECK-LABEL: func.func @expands_vector_atan(
// CHECK-SAME:      %[[X:[^:]+]]: vector<4xf32>)
// CHECK-NOT:     math.atan
// CHECK:         arith.extf %[[X]] : vector<4xf32> to vector<4xf64>
// CHECK:         arith.divf %{{.+}} : vector<4xf64>
// CHECK:         math.fma %{{.+}} : vector<4xf64>
// CHECK:         %[[T:.+]] = arith.truncf %{{.+}} : vector<4xf64> to vector<4xf32>
// CHECK:         %[[R:.+]] = math.copysign %[[T]], %[[X]] : vector<4xf32>
// CHECK-NOT:     math.atan
// CHECK:         return %[[R]]
func.func @expands_vector_atan(%x: vector<4xf32>) -> vector<4xf32> {
  %r = math.atan %x : vector<4xf32>
  return %r : vector<4xf32>
}

// -----

// atan2: atan(|y| / |x|) in f64, pi - r where x has its sign bit set, the
// sign of y copied, NaN if either operand is NaN.
// CHECK-LABEL: func.func @expands_scalar_atan2(
// CHECK-SAME:      %[[Y:[^:]+]]: f32, %[[X:[^:]+]]: f32)
// CHECK-NOT:     math.atan2
// CHECK:         arith.divf %{{.+}} : f64
// CHECK:         arith.bitcast %[[X]] : f32 to i32
// CHECK:         %[[Q:.+]] = math.copysign %{{.+}}, %[[Y]] : f32
// CHECK:         %[[NAN:.+]] = arith.cmpf uno, %[[X]], %[[Y]] : f32
// CHECK:         %[[R:.+]] = arith.select %[[NAN]], %{{.+}}, %[[Q]] : f32
// CHECK-NOT:     math.atan2
// CHECK:         return %[[R]]
func.func @expands_scalar_atan2(%y: f32, %x: f32) -> f32 {
  %r = math.atan2 %y, %x : f32
  return %r : f32
}

// -----

// powf of a variable base: 2^(y log2|x|) in f64 lanes, rounded once to f32,
// then the special cases; pow(x, 0) = 1 is the last select.
// CHECK-LABEL: func.func @expands_vector_powf(
// CHECK-SAME:      %[[X:[^:]+]]: vector<8xf32>, %[[Y:[^:]+]]: vector<8xf32>)
// CHECK-NOT:     math.powf
// CHECK:         arith.extf %[[Y]] : vector<8xf32> to vector<8xf64>
// CHECK:         arith.shrsi %{{.+}} : vector<8xi64>
// CHECK:         math.roundeven %{{.+}} : vector<8xf64>
// CHECK:         arith.truncf %{{.+}} : vector<8xf64> to vector<8xf32>
// CHECK:         %[[ZERO:.+]] = arith.cmpf oeq, %[[Y]], %{{.+}} : vector<8xf32>
// CHECK:         %[[R:.+]] = arith.select %[[ZERO]], %{{.+}}, %{{.+}} : vector<8xi1>, vector<8xf32>
// CHECK-NOT:     math.powf
// CHECK:         return %[[R]]
func.func @expands_vector_powf(%x: vector<8xf32>, %y: vector<8xf32>) -> vector<8xf32> {
  %r = math.powf %x, %y : vector<8xf32>
  return %r : vector<8xf32>
}

// -----

// f64 keeps libm (the pass has no f64 polynomials), and so do the functions
// it does not know (acos).
// CHECK-LABEL: func.func @keeps_f64_and_unknown_functions(
// CHECK-NEXT:    math.tanh %{{.+}} : vector<4xf64>
// CHECK-NEXT:    math.sin %{{.+}} : f64
// CHECK-NEXT:    math.acos %{{.+}} : f32
// CHECK-NEXT:    math.powf %{{.+}}, %{{.+}} : f64
// CHECK-NEXT:    math.atan2 %{{.+}}, %{{.+}} : f64
// CHECK-NEXT:    math.atan %{{.+}} : vector<4xf64>
// CHECK-NEXT:    return
func.func @keeps_f64_and_unknown_functions(%x: vector<4xf64>, %y: f64, %z: f32) -> (vector<4xf64>, f64, f32, f64, f64, vector<4xf64>) {
  %a = math.tanh %x : vector<4xf64>
  %b = math.sin %y : f64
  %c = math.acos %z : f32
  %d = math.powf %y, %y : f64
  %e = math.atan2 %y, %y : f64
  %f = math.atan %x : vector<4xf64>
  return %a, %b, %c, %d, %e, %f : vector<4xf64>, f64, f32, f64, f64, vector<4xf64>
}
