// lowerline-fuse-row-sweeps merges independent vector loops over the same
// range that read a tensor at the same index into one loop (upstream's
// transform.loop.fuse_sibling); CSE then reads and computes once.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-fuse-row-sweeps,cse)" \
// RUN:   --split-input-file | FileCheck %s

// Softmax's exp written to a buffer and its sum: one sweep, one exp.
// CHECK-LABEL: func.func @exp_and_sum_fused(
// CHECK:         %[[L:.+]]:2 = scf.for %[[J:.+]] = %c0 to %c128 step %c16 iter_args(
// CHECK-NEXT:      %[[X:.+]] = vector.transfer_read %{{.+}}[%[[J]]]
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[X]]
// CHECK-NOT:       math.exp
// CHECK-DAG:       arith.addf %[[E]]
// CHECK-DAG:       vector.transfer_write %[[E]]
// CHECK:           scf.yield
// CHECK-NOT:     scf.for
// CHECK:         return %[[L]]#{{[01]}}, %[[L]]#{{[01]}}
func.func @exp_and_sum_fused(%x: tensor<128xf32>, %buf: tensor<128xf32>) -> (tensor<128xf32>, vector<16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %e = scf.for %j = %c0 to %c128 step %c16 iter_args(%b = %buf) -> (tensor<128xf32>) {
    %v = vector.transfer_read %x[%j], %pad {in_bounds = [true]} : tensor<128xf32>, vector<16xf32>
    %y = math.exp %v : vector<16xf32>
    %w = vector.transfer_write %y, %b[%j] {in_bounds = [true]} : vector<16xf32>, tensor<128xf32>
    scf.yield %w : tensor<128xf32>
  }
  %s = scf.for %j = %c0 to %c128 step %c16 iter_args(%acc = %zero) -> (vector<16xf32>) {
    %v = vector.transfer_read %x[%j], %pad {in_bounds = [true]} : tensor<128xf32>, vector<16xf32>
    %y = math.exp %v : vector<16xf32>
    %a = arith.addf %y, %acc : vector<16xf32>
    scf.yield %a : vector<16xf32>
  }
  return %e, %s : tensor<128xf32>, vector<16xf32>
}

// -----

// The second loop reads what the first wrote: it must wait for all of it.
// CHECK-LABEL: func.func @dependent_loops_kept(
// CHECK:         scf.for
// CHECK:         scf.for
func.func @dependent_loops_kept(%x: tensor<128xf32>, %buf: tensor<128xf32>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %e = scf.for %j = %c0 to %c128 step %c16 iter_args(%b = %buf) -> (tensor<128xf32>) {
    %v = vector.transfer_read %x[%j], %pad {in_bounds = [true]} : tensor<128xf32>, vector<16xf32>
    %y = math.exp %v : vector<16xf32>
    %w = vector.transfer_write %y, %b[%j] {in_bounds = [true]} : vector<16xf32>, tensor<128xf32>
    scf.yield %w : tensor<128xf32>
  }
  %s = scf.for %j = %c0 to %c128 step %c16 iter_args(%acc = %zero) -> (vector<16xf32>) {
    %v = vector.transfer_read %x[%j], %pad {in_bounds = [true]} : tensor<128xf32>, vector<16xf32>
    %y = vector.transfer_read %e[%j], %pad {in_bounds = [true]} : tensor<128xf32>, vector<16xf32>
    %p = arith.mulf %v, %y : vector<16xf32>
    %a = arith.addf %p, %acc : vector<16xf32>
    scf.yield %a : vector<16xf32>
  }
  return %s : vector<16xf32>
}

// -----

// Different steps, or no tensor read by both at the same index: no fusion.
// CHECK-LABEL: func.func @unrelated_loops_kept(
// CHECK-COUNT-3: scf.for
func.func @unrelated_loops_kept(%x: tensor<128xf32>, %y: tensor<128xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %a = scf.for %j = %c0 to %c128 step %c16 iter_args(%acc = %zero) -> (vector<16xf32>) {
    %v = vector.transfer_read %x[%j], %pad {in_bounds = [true]} : tensor<128xf32>, vector<16xf32>
    %s = arith.addf %v, %acc : vector<16xf32>
    scf.yield %s : vector<16xf32>
  }
  %b = scf.for %j = %c0 to %c128 step %c32 iter_args(%acc = %zero) -> (vector<16xf32>) {
    %v = vector.transfer_read %x[%j], %pad {in_bounds = [true]} : tensor<128xf32>, vector<16xf32>
    %s = arith.maximumf %v, %acc : vector<16xf32>
    scf.yield %s : vector<16xf32>
  }
  %c = scf.for %j = %c0 to %c128 step %c16 iter_args(%acc = %zero) -> (vector<16xf32>) {
    %v = vector.transfer_read %y[%j], %pad {in_bounds = [true]} : tensor<128xf32>, vector<16xf32>
    %s = arith.maximumf %v, %acc : vector<16xf32>
    scf.yield %s : vector<16xf32>
  }
  return %a, %b, %c : vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// -----

// Two sums over one block of a row at %off (the block moments of a long
// row): each loop computes its index %off + %j itself; the same map of the
// same operands is the same read, and the loops become one sweep.
// CHECK-LABEL: func.func @block_offset_reads_fused(
// CHECK:         %{{.+}}:2 = scf.for %[[J:.+]] = %c0 to %c128 step %c16 iter_args(
// CHECK-NEXT:      %[[I:.+]] = affine.apply #{{.+}}()[%{{.+}}, %[[J]]]
// CHECK-NEXT:      vector.transfer_read %{{.+}}[%[[I]]]
// CHECK-NOT:       vector.transfer_read
// CHECK:           scf.yield
// CHECK-NOT:     scf.for
#offset = affine_map<()[s0, s1] -> (s0 + s1)>
func.func @block_offset_reads_fused(%x: tensor<1024xf32>, %off: index) -> (vector<16xf32>, vector<16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %s = scf.for %j = %c0 to %c128 step %c16 iter_args(%acc = %zero) -> (vector<16xf32>) {
    %i = affine.apply #offset()[%off, %j]
    %v = vector.transfer_read %x[%i], %pad {in_bounds = [true]} : tensor<1024xf32>, vector<16xf32>
    %a = arith.addf %v, %acc : vector<16xf32>
    scf.yield %a : vector<16xf32>
  }
  %q = scf.for %j = %c0 to %c128 step %c16 iter_args(%acc = %zero) -> (vector<16xf32>) {
    %i = affine.apply #offset()[%off, %j]
    %v = vector.transfer_read %x[%i], %pad {in_bounds = [true]} : tensor<1024xf32>, vector<16xf32>
    %p = arith.mulf %v, %v : vector<16xf32>
    %a = arith.addf %p, %acc : vector<16xf32>
    scf.yield %a : vector<16xf32>
  }
  return %s, %q : vector<16xf32>, vector<16xf32>
}

// -----

// The same loops reading 16 elements apart (another map): no shared read.
// CHECK-LABEL: func.func @other_offset_reads_kept(
// CHECK:         scf.for
// CHECK:         scf.for
#offset = affine_map<()[s0, s1] -> (s0 + s1)>
#other = affine_map<()[s0, s1] -> (s0 + s1 + 16)>
func.func @other_offset_reads_kept(%x: tensor<1024xf32>, %off: index) -> (vector<16xf32>, vector<16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %s = scf.for %j = %c0 to %c128 step %c16 iter_args(%acc = %zero) -> (vector<16xf32>) {
    %i = affine.apply #offset()[%off, %j]
    %v = vector.transfer_read %x[%i], %pad {in_bounds = [true]} : tensor<1024xf32>, vector<16xf32>
    %a = arith.addf %v, %acc : vector<16xf32>
    scf.yield %a : vector<16xf32>
  }
  %q = scf.for %j = %c0 to %c128 step %c16 iter_args(%acc = %zero) -> (vector<16xf32>) {
    %i = affine.apply #other()[%off, %j]
    %v = vector.transfer_read %x[%i], %pad {in_bounds = [true]} : tensor<1024xf32>, vector<16xf32>
    %p = arith.mulf %v, %v : vector<16xf32>
    %a = arith.addf %p, %acc : vector<16xf32>
    scf.yield %a : vector<16xf32>
  }
  return %s, %q : vector<16xf32>, vector<16xf32>
}
