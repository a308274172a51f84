// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-graph)" \
// RUN:   --split-input-file | FileCheck %s

// The bias add and the ReLU, written as two generics, fuse into one epilogue;
// the matmul is not elementwise and stays a named op.
// CHECK-LABEL: func.func @fuses_bias_add_into_relu(
// CHECK-SAME:      %[[A:.+]]: tensor<16x32xf32>, %[[B:.+]]: tensor<32x8xf32>, %[[BIAS:.+]]: tensor<8xf32>
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[EMPTY:.+]] = tensor.empty() : tensor<16x8xf32>
// CHECK:         %[[ACC:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<16x8xf32>)
// CHECK:         %[[MM:.+]] = linalg.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[ACC]] : tensor<16x8xf32>)
// CHECK:         %[[OUT:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[MM]], %[[BIAS]] : tensor<16x8xf32>, tensor<8xf32>)
// CHECK-SAME:        outs(%[[EMPTY]] : tensor<16x8xf32>)
// CHECK:           %[[SUM:.+]] = arith.addf
// CHECK:           %[[RELU:.+]] = arith.maximumf %[[SUM]], %[[ZERO]] : f32
// CHECK:           linalg.yield %[[RELU]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[OUT]] : tensor<16x8xf32>
func.func @fuses_bias_add_into_relu(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>,
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

// An epilogue already written as one generic is left as it is.
// CHECK-LABEL: func.func @keeps_fused_epilogue(
// CHECK:         linalg.fill
// CHECK:         %[[MM:.+]] = linalg.matmul
// CHECK:         %[[OUT:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[MM]], %{{.+}} : tensor<16x8xf32>, tensor<8xf32>)
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[OUT]]
func.func @keeps_fused_epilogue(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>,
                                %bias: tensor<8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x8xf32>) -> tensor<16x8xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x8xf32>)
                      outs(%acc : tensor<16x8xf32>) -> tensor<16x8xf32>
  %out = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<16x8xf32>, tensor<8xf32>) outs(%empty : tensor<16x8xf32>) {
  ^bb0(%x: f32, %bv: f32, %o: f32):
    %s = arith.addf %x, %bv : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  return %out : tensor<16x8xf32>
}

// -----

// A chain of four elementwise generics on an odd shape becomes one generic
// reading both inputs once.
// CHECK-LABEL: func.func @fuses_elementwise_chain(
// CHECK-SAME:      %[[X:.+]]: tensor<7x13xf32>, %[[Y:.+]]: tensor<7x13xf32>
// CHECK:         %[[OUT:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[X]], %[[Y]] : tensor<7x13xf32>, tensor<7x13xf32>)
// CHECK-NEXT:    ^bb0(%[[IX:.+]]: f32, %[[IY:.+]]: f32, %{{.+}}: f32):
// CHECK-DAG:       %[[T:.+]] = math.tanh %[[IY]] : f32
// CHECK-DAG:       %[[E:.+]] = math.exp %[[IX]] : f32
// CHECK:           %[[M:.+]] = arith.mulf %[[E]], %[[T]] : f32
// CHECK:           %[[C:.+]] = arith.cmpf ogt, %[[M]], %[[IX]] : f32
// CHECK:           %[[S:.+]] = arith.select %[[C]], %[[M]], %[[IX]] : f32
// CHECK:           linalg.yield %[[S]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[OUT]] : tensor<7x13xf32>
func.func @fuses_elementwise_chain(%x: tensor<7x13xf32>, %y: tensor<7x13xf32>) -> tensor<7x13xf32> {
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
    %r = math.tanh %a : f32
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

// A comparison consuming an elementwise producer fuses with it; the fused
// generic keeps the i1 output.
// CHECK-LABEL: func.func @fuses_into_i1_mask(
// CHECK-SAME:      -> tensor<7x13xi1>
// CHECK:         %[[EMPTY:.+]] = tensor.empty() : tensor<7x13xi1>
// CHECK:         %[[OUT:.+]] = linalg.generic
// CHECK-SAME:        outs(%[[EMPTY]] : tensor<7x13xi1>)
// CHECK:           math.exp
// CHECK:           %[[C:.+]] = arith.cmpf olt
// CHECK:           linalg.yield %[[C]] : i1
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[OUT]] : tensor<7x13xi1>
func.func @fuses_into_i1_mask(%x: tensor<7x13xf32>, %y: tensor<7x13xf32>) -> tensor<7x13xi1> {
  %empty = tensor.empty() : tensor<7x13xf32>
  %e = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<7x13xf32>) outs(%empty : tensor<7x13xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<7x13xf32>
  %mask_init = tensor.empty() : tensor<7x13xi1>
  %mask = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%e, %y : tensor<7x13xf32>, tensor<7x13xf32>) outs(%mask_init : tensor<7x13xi1>) {
  ^bb0(%a: f32, %b: f32, %o: i1):
    %c = arith.cmpf olt, %a, %b : f32
    linalg.yield %c : i1
  } -> tensor<7x13xi1>
  return %mask : tensor<7x13xi1>
}

// -----

// A producer whose result is also returned is not fused: fusing would
// compute it twice.
// CHECK-LABEL: func.func @does_not_fuse_producer_with_other_uses(
// CHECK:         %[[E:.+]] = linalg.generic
// CHECK:           math.exp
// CHECK:         %[[N:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[E]] : tensor<7x13xf32>)
// CHECK:           arith.negf
// CHECK:         return %[[E]], %[[N]]
func.func @does_not_fuse_producer_with_other_uses(%x: tensor<7x13xf32>)
    -> (tensor<7x13xf32>, tensor<7x13xf32>) {
  %empty = tensor.empty() : tensor<7x13xf32>
  %e = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<7x13xf32>) outs(%empty : tensor<7x13xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<7x13xf32>
  %n = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<7x13xf32>) outs(%empty : tensor<7x13xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<7x13xf32>
  return %e, %n : tensor<7x13xf32>, tensor<7x13xf32>
}

// -----

// Elementwise arith on whole tensors (how bool weights are bound: bytes
// truncated to i1) becomes a linalg.generic, which fuses into its consumer.
// CHECK-LABEL: func.func @fuses_tensor_arith_into_consumer(
// CHECK-SAME:      %[[X:.+]]: tensor<7x13xf32>
// CHECK:         %[[KEEP:.+]] = arith.constant dense_resource<keep> : tensor<7x13xi8>
// CHECK-NOT:     arith.trunci %[[KEEP]]
// CHECK:         %[[OUT:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[KEEP]], %[[X]] : tensor<7x13xi8>, tensor<7x13xf32>)
// CHECK:           %[[B:.+]] = arith.trunci %{{.+}} : i8 to i1
// CHECK:           arith.select %[[B]]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[OUT]] : tensor<7x13xf32>
func.func @fuses_tensor_arith_into_consumer(%x: tensor<7x13xf32>) -> tensor<7x13xf32> {
  %bytes = arith.constant dense_resource<keep> : tensor<7x13xi8>
  %keep = arith.trunci %bytes : tensor<7x13xi8> to tensor<7x13xi1>
  %empty = tensor.empty() : tensor<7x13xf32>
  %out = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%keep, %x : tensor<7x13xi1>, tensor<7x13xf32>) outs(%empty : tensor<7x13xf32>) {
  ^bb0(%k: i1, %v: f32, %o: f32):
    %n = arith.negf %v : f32
    %s = arith.select %k, %v, %n : f32
    linalg.yield %s : f32
  } -> tensor<7x13xf32>
  return %out : tensor<7x13xf32>
}

{-#
  dialect_resources: {
    builtin: {
      keep: "0x0100000001000000010100000001010000000101000000010100000001010000000101000000010100000001010000000101000000010100000001010000000101000000010100000001010000000101000000010100000001010000000101"
    }
  }
#-}
