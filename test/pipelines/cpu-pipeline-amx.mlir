// An int8 linear layer (13x37 by 37x29, its requantize epilogue) through
// every CPU stage: on AMX tiles for a target with AMX (sapphirerapids), the
// library marked for the runtime's AMX permission request; on vpdpbusd
// register tiles for one with AVX-512 VNNI only (znver4).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline{target=sapphirerapids})" \
// RUN:   | FileCheck %s --check-prefix=AMX
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline{target=znver4})" \
// RUN:   | FileCheck %s --check-prefix=VNNI

// AMX: llvm.mlir.global external constant @lowerline_uses_amx(1 : i8)
// AMX-LABEL: llvm.func @linear(
// AMX:         llvm.call_intrinsic "llvm.x86.tileloadd64.internal"
// AMX:         llvm.call_intrinsic "llvm.x86.tdpbssd.internal"
// AMX:         llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// AMX-NOT:     vpdpbusd
// AMX:         llvm.return
// VNNI-NOT: lowerline_uses_amx
// VNNI-LABEL: llvm.func @linear(
// VNNI-NOT:     llvm.x86.t
// VNNI:         llvm.call @llvm.x86.avx512.vpdpbusd.512
// VNNI-NOT:     llvm.x86.t
// VNNI:         llvm.return
func.func @linear(%a: tensor<13x37xi8>, %scale: tensor<29xf32>) -> tensor<13x29xi8> {
  %b = arith.constant dense<3> : tensor<37x29xi8>
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<13x29xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<13x29xi32>) -> tensor<13x29xi32>
  %m = linalg.matmul ins(%a, %b : tensor<13x37xi8>, tensor<37x29xi8>) outs(%f : tensor<13x29xi32>) -> tensor<13x29xi32>
  %e8 = tensor.empty() : tensor<13x29xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%m, %scale : tensor<13x29xi32>, tensor<29xf32>) outs(%e8 : tensor<13x29xi8>) {
  ^bb0(%x: i32, %s: f32, %o: i8):
    %xf = arith.sitofp %x : i32 to f32
    %y = arith.mulf %xf, %s : f32
    %q = arith.fptosi %y : f32 to i8
    linalg.yield %q : i8
  } -> tensor<13x29xi8>
  return %r : tensor<13x29xi8>
}
