// Without the tiled stage every op becomes scalar loops (CHECK); with it
// (the default) contractions become FMAs on vectors and the epilogue runs on
// the accumulators (VEC).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline{tile=false})" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s \
// RUN:   --pass-pipeline="builtin.module(lowerline-cpu-pipeline{tile=false widen-i1=true})" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-cpu-pipeline{tile=false})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=NONE
// RUN: lowerline-opt %s \
// RUN:   --pass-pipeline="builtin.module(lowerline-cpu-pipeline{target=sapphirerapids num-threads=1})" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=VEC

// linalg on tensors in, LLVM dialect out: every stage in one pipeline.
// NONE-NOT: func.func
// NONE-NOT: tensor
// NONE-NOT: bufferization.
// NONE-NOT: linalg.
// NONE-NOT: memref.
// NONE-NOT: scf.
// NONE-NOT: cf.
// NONE-NOT: arith.
// NONE-NOT: math.
// NONE-NOT: unrealized_conversion_cast
// NONE-NOT: : i1, !llvm.ptr

// Matmul + bias + ReLU with the epilogue split in two generics: the result is
// a fourth (out-param) descriptor, then the (empty) arena's, and the fused
// epilogue feeds the bias add straight into the max, with no store and reload
// in between.
// CHECK-LABEL: llvm.func @matmul_bias_relu(
// CHECK-SAME:      attributes {llvm.emit_c_interface, lowerline.arena = array<i64: 0, 0>, lowerline.failure_record = -1 : i64}
// CHECK:         llvm.fmul
// CHECK:         llvm.fadd
// CHECK:         %[[SUM:.+]] = llvm.fadd
// CHECK-NEXT:    %[[RELU:.+]] = llvm.intr.maximum(%[[SUM]], %{{.+}}) : (f32, f32) -> f32
// CHECK-NEXT:    llvm.store %[[RELU]], %{{.+}} : f32, !llvm.ptr
// CHECK-NOT:     llvm.intr.maximum
// CHECK:         llvm.return{{$}}
// VEC-LABEL: llvm.func @matmul_bias_relu(
// VEC-COUNT-8: llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// VEC-NOT:     llvm.store
// VEC-COUNT-8: llvm.intr.maximum({{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// VEC:         llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr
// VEC-NOT:     llvm.fmul
// VEC-LABEL: llvm.func @_mlir_ciface_matmul_bias_relu(
// CHECK-LABEL: llvm.func @_mlir_ciface_matmul_bias_relu(
// CHECK-SAME:      %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr)
// CHECK:         llvm.call @matmul_bias_relu(
func.func @matmul_bias_relu(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>,
                            %bias: tensor<8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x8xf32>) -> tensor<16x8xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x8xf32>)
                      outs(%acc : tensor<16x8xf32>) -> tensor<16x8xf32>
  %add = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<16x8xf32>, tensor<8xf32>) outs(%empty : tensor<16x8xf32>) {
  ^bb0(%x: f32, %bv: f32, %o: f32):
    %s = arith.addf %x, %bv : f32
    linalg.yield %s : f32
  } -> tensor<16x8xf32>
  %relu = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%add : tensor<16x8xf32>) outs(%empty : tensor<16x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  return %relu : tensor<16x8xf32>
}

// -----

// Four elementwise generics on 7x13 end as one loop nest calling the tan
// intrinsic once per element; exp is expanded inline (lowerline-approximate-exp).
// CHECK-LABEL: llvm.func @elementwise(
// CHECK-NOT:     llvm.intr.exp
// CHECK:         llvm.intr.tan
// CHECK:         llvm.intr.floor
// CHECK:         %[[E:.+]] = llvm.select %{{.+}} : i1, f32
// CHECK-NEXT:    llvm.fmul %[[E]], %{{.+}} : f32
// CHECK-NEXT:    llvm.fcmp "ogt"
// CHECK-NEXT:    llvm.select
// CHECK:         llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr
// CHECK-NOT:     llvm.intr.exp
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_elementwise(
// VEC-LABEL: llvm.func @elementwise(
// VEC-NOT:     llvm.intr.exp
// VEC:         llvm.intr.tan(%{{.+}}) : (vector<13xf32>) -> vector<13xf32>
// VEC:         llvm.intr.floor(%{{.+}}) : (vector<13xf32>) -> vector<13xf32>
// VEC:         %[[E:.+]] = llvm.select %{{.+}} : vector<13xi1>, vector<13xf32>
// VEC-NEXT:    llvm.fmul %[[E]], %{{.+}} : vector<13xf32>
// VEC-NEXT:    llvm.fcmp "ogt" %{{.+}} : vector<13xf32>
// VEC-NEXT:    llvm.select
// VEC:         llvm.store %{{.+}} : vector<13xf32>, !llvm.ptr
// VEC-NOT:     llvm.intr.exp
func.func @elementwise(%x: tensor<7x13xf32>, %y: tensor<7x13xf32>) -> tensor<7x13xf32> {
  %empty = tensor.empty() : tensor<7x13xf32>
  %e = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<7x13xf32>) outs(%empty : tensor<7x13xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<7x13xf32>
  %t = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<7x13xf32>) outs(%empty : tensor<7x13xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tan %a : f32
    linalg.yield %r : f32
  } -> tensor<7x13xf32>
  %m = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%e, %t : tensor<7x13xf32>, tensor<7x13xf32>) outs(%empty : tensor<7x13xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<7x13xf32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%m, %x : tensor<7x13xf32>, tensor<7x13xf32>) outs(%empty : tensor<7x13xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %c = arith.cmpf ogt, %a, %b : f32
    %r = arith.select %c, %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<7x13xf32>
  return %s : tensor<7x13xf32>
}

// -----

// A comparison result (a bool tensor) reaches memory as one byte per element.
// CHECK-LABEL: llvm.func @compare_to_mask(
// CHECK:         %[[C:.+]] = llvm.fcmp "olt"
// CHECK:         %[[B:.+]] = llvm.zext %[[C]] : i1 to i8
// CHECK:         %[[P:.+]] = llvm.getelementptr inbounds|nuw %{{.+}}[%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         llvm.store %[[B]], %[[P]] : i8, !llvm.ptr
// CHECK-LABEL: llvm.func @_mlir_ciface_compare_to_mask(
func.func @compare_to_mask(%x: tensor<7x13xf32>, %y: tensor<7x13xf32>) -> tensor<7x13xi1> {
  %empty = tensor.empty() : tensor<7x13xi1>
  %c = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<7x13xf32>, tensor<7x13xf32>) outs(%empty : tensor<7x13xi1>) {
  ^bb0(%a: f32, %b: f32, %o: i1):
    %r = arith.cmpf olt, %a, %b : f32
    linalg.yield %r : i1
  } -> tensor<7x13xi1>
  return %c : tensor<7x13xi1>
}
