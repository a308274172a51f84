// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-carry-masked-accumulators)" \
// RUN:   --split-input-file | FileCheck %s

// A row max over a dynamic row (lowerline-tile-and-fuse's chunks of one
// register, vectorized): the masked last chunk updates the partial maxima
// in a vector carried by the peeled loop, a select keeping the lanes the
// mask leaves out; no 1x16 tensor, no masked write, no read after the loop.
// CHECK-LABEL: func.func @row_max_masked_tail(
// CHECK:         %[[FULL:.+]] = scf.for {{.+}} -> (vector<1x16xf32>)
// CHECK:         %[[ACC:.+]] = vector.extract %[[FULL]][0]
// CHECK-NOT:     vector.transfer_write
// CHECK:         %[[TAIL:.+]] = scf.for {{.+}} iter_args(%[[A:.+]] = %[[ACC]]) -> (vector<16xf32>)
// CHECK:           %[[M:.+]] = vector.create_mask
// CHECK:           %[[X:.+]] = vector.transfer_read {{.+}}, %[[M]]
// CHECK-NOT:       vector.transfer_read
// CHECK:           %[[Y:.+]] = arith.maximumf %[[X]], %[[A]] : vector<16xf32>
// CHECK:           %[[S:.+]] = arith.select %[[M]], %[[Y]], %[[A]] : vector<16xi1>, vector<16xf32>
// CHECK-NOT:       vector.transfer_write
// CHECK:           scf.yield %[[S]] : vector<16xf32>
// CHECK:         vector.reduction <maximumf>, %[[TAIL]], %{{.+}} : vector<16xf32> into f32
#tail = affine_map<(d0)[s0] -> (-d0 + s0)>
#full = affine_map<()[s0] -> ((s0 floordiv 16) * 16)>
func.func @row_max_masked_tail(%row: tensor<1x?xf32>, %init: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = ub.poison : f32
  %ninf = arith.constant dense<0xFF800000> : vector<1x16xf32>
  %n = tensor.dim %row, %c1 : tensor<1x?xf32>
  %end = affine.apply #full()[%n]
  %full = scf.for %j = %c0 to %end step %c16 iter_args(%acc = %ninf) -> (vector<1x16xf32>) {
    %x = vector.transfer_read %row[%c0, %j], %pad {in_bounds = [true]} : tensor<1x?xf32>, vector<16xf32>
    %a = vector.extract %acc[0] : vector<16xf32> from vector<1x16xf32>
    %y = arith.maximumf %x, %a : vector<16xf32>
    %b = vector.broadcast %y : vector<16xf32> to vector<1x16xf32>
    scf.yield %b : vector<1x16xf32>
  }
  %v = vector.extract %full[0] : vector<16xf32> from vector<1x16xf32>
  %empty = tensor.empty() : tensor<1x16xf32>
  %t0 = vector.transfer_write %v, %empty[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<1x16xf32>
  %t = scf.for %j = %end to %n step %c16 iter_args(%p = %t0) -> (tensor<1x16xf32>) {
    %size = affine.apply #tail(%j)[%n]
    %xs = tensor.extract_slice %row[0, %j] [1, %size] [1, 1] : tensor<1x?xf32> to tensor<1x?xf32>
    %ps = tensor.extract_slice %p[0, 0] [1, %size] [1, 1] : tensor<1x16xf32> to tensor<1x?xf32>
    %m = vector.create_mask %size : vector<16xi1>
    %x = vector.transfer_read %xs[%c0, %c0], %pad, %m {in_bounds = [true]} : tensor<1x?xf32>, vector<16xf32>
    %a = vector.transfer_read %ps[%c0, %c0], %pad, %m {in_bounds = [true]} : tensor<1x?xf32>, vector<16xf32>
    %y = arith.maximumf %x, %a : vector<16xf32>
    %w = vector.transfer_write %y, %ps[%c0, %c0], %m {in_bounds = [true]} : vector<16xf32>, tensor<1x?xf32>
    %i = tensor.insert_slice %w into %p[0, 0] [1, %size] [1, 1] : tensor<1x?xf32> into tensor<1x16xf32>
    scf.yield %i : tensor<1x16xf32>
  }
  %r = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true]} : tensor<1x16xf32>, vector<16xf32>
  %s = vector.reduction <maximumf>, %r, %init : vector<16xf32> into f32
  return %s : f32
}

// -----

// A masked fill of a row's partial last tile: the loop's tensor does not
// start from a whole vector written before it (it is a slice of the
// output), so it stays a tensor.
// CHECK-LABEL: func.func @keeps_masked_fill(
// CHECK:         scf.for {{.+}} -> (tensor<?xf32>)
// CHECK:           vector.transfer_write {{.+}}, %{{.+}} {in_bounds = [true]} : vector<16xf32>, tensor<?xf32>
// CHECK-NOT:     arith.select
#size = affine_map<(d0)[s0] -> (-d0 + s0, 16)>
func.func @keeps_masked_fill(%out: tensor<?xf32>, %n: index) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %ninf = arith.constant dense<0xFF800000> : vector<16xf32>
  %r = scf.for %j = %c0 to %n step %c16 iter_args(%p = %out) -> (tensor<?xf32>) {
    %size = affine.min #size(%j)[%n]
    %ps = tensor.extract_slice %p[%j] [%size] [1] : tensor<?xf32> to tensor<?xf32>
    %m = vector.create_mask %size : vector<16xi1>
    %w = vector.transfer_write %ninf, %ps[%c0], %m {in_bounds = [true]} : vector<16xf32>, tensor<?xf32>
    %i = tensor.insert_slice %w into %p[%j] [%size] [1] : tensor<?xf32> into tensor<?xf32>
    scf.yield %i : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

// The partial results are returned as a tensor after the loop, not read
// whole into a vector: left as they are.
// CHECK-LABEL: func.func @keeps_returned_accumulator(
// CHECK:         scf.for {{.+}} -> (tensor<1x16xf32>)
// CHECK:           vector.transfer_write {{.+}}, %{{.+}}[%{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]}
// CHECK-NOT:     arith.select
#tail = affine_map<(d0)[s0] -> (-d0 + s0)>
func.func @keeps_returned_accumulator(%row: tensor<1x?xf32>, %v: vector<16xf32>, %lo: index) -> tensor<1x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = ub.poison : f32
  %n = tensor.dim %row, %c1 : tensor<1x?xf32>
  %empty = tensor.empty() : tensor<1x16xf32>
  %t0 = vector.transfer_write %v, %empty[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<1x16xf32>
  %t = scf.for %j = %lo to %n step %c16 iter_args(%p = %t0) -> (tensor<1x16xf32>) {
    %size = affine.apply #tail(%j)[%n]
    %xs = tensor.extract_slice %row[0, %j] [1, %size] [1, 1] : tensor<1x?xf32> to tensor<1x?xf32>
    %ps = tensor.extract_slice %p[0, 0] [1, %size] [1, 1] : tensor<1x16xf32> to tensor<1x?xf32>
    %m = vector.create_mask %size : vector<16xi1>
    %x = vector.transfer_read %xs[%c0, %c0], %pad, %m {in_bounds = [true]} : tensor<1x?xf32>, vector<16xf32>
    %a = vector.transfer_read %ps[%c0, %c0], %pad, %m {in_bounds = [true]} : tensor<1x?xf32>, vector<16xf32>
    %y = arith.addf %x, %a : vector<16xf32>
    %w = vector.transfer_write %y, %ps[%c0, %c0], %m {in_bounds = [true]} : vector<16xf32>, tensor<1x?xf32>
    %i = tensor.insert_slice %w into %p[0, 0] [1, %size] [1, 1] : tensor<1x?xf32> into tensor<1x16xf32>
    scf.yield %i : tensor<1x16xf32>
  }
  return %t : tensor<1x16xf32>
}

// -----

// The read and the write of the partial results take different masks: the
// write may cover lanes the read did not, so the select would not be the
// same; left as it is.
// CHECK-LABEL: func.func @keeps_different_masks(
// CHECK:         scf.for {{.+}} -> (tensor<1x16xf32>)
// CHECK-NOT:     arith.select
#tail = affine_map<(d0)[s0] -> (-d0 + s0)>
func.func @keeps_different_masks(%row: tensor<1x?xf32>, %v: vector<16xf32>, %lo: index, %k: index) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = ub.poison : f32
  %n = tensor.dim %row, %c1 : tensor<1x?xf32>
  %empty = tensor.empty() : tensor<1x16xf32>
  %t0 = vector.transfer_write %v, %empty[%c0, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<1x16xf32>
  %t = scf.for %j = %lo to %n step %c16 iter_args(%p = %t0) -> (tensor<1x16xf32>) {
    %size = affine.apply #tail(%j)[%n]
    %xs = tensor.extract_slice %row[0, %j] [1, %size] [1, 1] : tensor<1x?xf32> to tensor<1x?xf32>
    %ps = tensor.extract_slice %p[0, 0] [1, %size] [1, 1] : tensor<1x16xf32> to tensor<1x?xf32>
    %m = vector.create_mask %size : vector<16xi1>
    %m2 = vector.create_mask %k : vector<16xi1>
    %x = vector.transfer_read %xs[%c0, %c0], %pad, %m {in_bounds = [true]} : tensor<1x?xf32>, vector<16xf32>
    %a = vector.transfer_read %ps[%c0, %c0], %pad, %m {in_bounds = [true]} : tensor<1x?xf32>, vector<16xf32>
    %y = arith.addf %x, %a : vector<16xf32>
    %w = vector.transfer_write %y, %ps[%c0, %c0], %m2 {in_bounds = [true]} : vector<16xf32>, tensor<1x?xf32>
    %i = tensor.insert_slice %w into %p[0, 0] [1, %size] [1, 1] : tensor<1x?xf32> into tensor<1x16xf32>
    scf.yield %i : tensor<1x16xf32>
  }
  %r = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true]} : tensor<1x16xf32>, vector<16xf32>
  return %r : vector<16xf32>
}
