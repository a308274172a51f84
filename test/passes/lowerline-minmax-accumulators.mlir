// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-minmax-accumulators)" \
// RUN:   --split-input-file | FileCheck %s

// A row max whose accumulator is carried by the loop (reached through
// vector.extract and yielded through vector.broadcast): the step becomes a
// compare and select on the accumulator, and a NaN of the input is or-ed in
// as all-ones bits, off the accumulator's chain.
// CHECK-LABEL: func.func @max_accumulator(
// CHECK:         scf.for {{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (vector<1x64xf32>)
// CHECK:           %[[X:.+]] = vector.transfer_read
// CHECK:           %[[A:.+]] = vector.extract %[[ACC]][0]
// CHECK-NOT:       arith.maximumf
// CHECK:           %[[GT:.+]] = arith.cmpf ogt, %[[X]], %[[A]] : vector<64xf32>
// CHECK:           %[[M:.+]] = arith.select %[[GT]], %[[X]], %[[A]]
// CHECK:           %[[NAN:.+]] = arith.cmpf uno, %[[X]], %[[X]] : vector<64xf32>
// CHECK:           %[[ONES:.+]] = arith.extsi %[[NAN]] : vector<64xi1> to vector<64xi32>
// CHECK:           %[[BITS:.+]] = arith.bitcast %[[M]] : vector<64xf32> to vector<64xi32>
// CHECK:           %[[OR:.+]] = arith.ori %[[BITS]], %[[ONES]] : vector<64xi32>
// CHECK:           %[[R:.+]] = arith.bitcast %[[OR]] : vector<64xi32> to vector<64xf32>
// CHECK:           %[[B:.+]] = vector.broadcast %[[R]]
// CHECK:           scf.yield %[[B]]
// The horizontal reduction after the loop keeps IEEE maximum.
// CHECK:         vector.reduction <maximumf>
func.func @max_accumulator(%m: memref<4096xf32>, %init: vector<1x64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  %pad = ub.poison : f32
  %ninf = arith.constant 0xFF800000 : f32
  %r = scf.for %i = %c0 to %c4096 step %c64 iter_args(%acc = %init) -> (vector<1x64xf32>) {
    %x = vector.transfer_read %m[%i], %pad {in_bounds = [true]} : memref<4096xf32>, vector<64xf32>
    %a = vector.extract %acc[0] : vector<64xf32> from vector<1x64xf32>
    %y = arith.maximumf %x, %a : vector<64xf32>
    %b = vector.broadcast %y : vector<64xf32> to vector<1x64xf32>
    scf.yield %b : vector<1x64xf32>
  }
  %v = vector.extract %r[0] : vector<64xf32> from vector<1x64xf32>
  %s = vector.reduction <maximumf>, %v, %ninf : vector<64xf32> into f32
  return %s : f32
}

// -----

// A chain of steps between the iter_arg and the yield (a strided max pool's
// kw taps unrolled into one step): each is a compare and select on the
// previous one's result, none keeps IEEE maximum.
// CHECK-LABEL: func.func @max_chain(
// CHECK:         scf.for {{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (vector<16xf32>)
// CHECK-NOT:       arith.maximumf
// CHECK:           %[[GT0:.+]] = arith.cmpf ogt, %[[X0:.+]], %[[ACC]] : vector<16xf32>
// CHECK:           arith.select %[[GT0]], %[[X0]], %[[ACC]]
// CHECK:           %[[R0:.+]] = arith.bitcast %{{.+}} : vector<16xi32> to vector<16xf32>
// CHECK:           %[[GT1:.+]] = arith.cmpf ogt, %[[X1:.+]], %[[R0]] : vector<16xf32>
// CHECK:           arith.select %[[GT1]], %[[X1]], %[[R0]]
// CHECK:           %[[R1:.+]] = arith.bitcast %{{.+}} : vector<16xi32> to vector<16xf32>
// CHECK:           scf.yield %[[R1]]
func.func @max_chain(%m: memref<256xf32>, %init: vector<16xf32>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c240 = arith.constant 240 : index
  %pad = ub.poison : f32
  %r = scf.for %i = %c0 to %c240 step %c16 iter_args(%acc = %init) -> (vector<16xf32>) {
    %x = vector.transfer_read %m[%i], %pad {in_bounds = [true]} : memref<256xf32>, vector<16xf32>
    %j = arith.addi %i, %c1 : index
    %x1 = vector.transfer_read %m[%j], %pad {in_bounds = [true]} : memref<256xf32>, vector<16xf32>
    %y = arith.maximumf %acc, %x : vector<16xf32>
    %z = arith.maximumf %y, %x1 : vector<16xf32>
    scf.yield %z : vector<16xf32>
  }
  return %r : vector<16xf32>
}

// -----

// A max whose result is also used elsewhere is not a chain step: IEEE
// maximum stays for it and for the step after it.
// CHECK-LABEL: func.func @max_chain_with_other_use(
// CHECK:         scf.for
// CHECK:           arith.maximumf
// CHECK:           arith.maximumf
func.func @max_chain_with_other_use(%m: memref<256xf32>, %init: vector<16xf32>, %out: memref<16xf32>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c240 = arith.constant 240 : index
  %pad = ub.poison : f32
  %r = scf.for %i = %c0 to %c240 step %c16 iter_args(%acc = %init) -> (vector<16xf32>) {
    %x = vector.transfer_read %m[%i], %pad {in_bounds = [true]} : memref<256xf32>, vector<16xf32>
    %y = arith.maximumf %acc, %x : vector<16xf32>
    vector.transfer_write %y, %out[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
    %z = arith.maximumf %y, %x : vector<16xf32>
    scf.yield %z : vector<16xf32>
  }
  return %r : vector<16xf32>
}

// -----

// A min with the accumulator as the first operand: the compare is olt, of
// the loaded value against the accumulator.
// CHECK-LABEL: func.func @min_accumulator_first(
// CHECK:         scf.for {{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (vector<16xf32>)
// CHECK:           %[[X:.+]] = vector.transfer_read
// CHECK-NOT:       arith.minimumf
// CHECK:           %[[LT:.+]] = arith.cmpf olt, %[[X]], %[[ACC]] : vector<16xf32>
// CHECK:           arith.select %[[LT]], %[[X]], %[[ACC]]
// CHECK:           arith.cmpf uno, %[[X]], %[[X]]
func.func @min_accumulator_first(%m: memref<256xf32>, %init: vector<16xf32>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %pad = ub.poison : f32
  %r = scf.for %i = %c0 to %c256 step %c16 iter_args(%acc = %init) -> (vector<16xf32>) {
    %x = vector.transfer_read %m[%i], %pad {in_bounds = [true]} : memref<256xf32>, vector<16xf32>
    %y = arith.minimumf %acc, %x : vector<16xf32>
    scf.yield %y : vector<16xf32>
  }
  return %r : vector<16xf32>
}

// -----

// Not an accumulator: an elementwise maximum of two loads in a loop (torch.maximum)
// keeps IEEE semantics (-0 below +0), and so does a max of an iter_arg that
// is not yielded back into the same iter_arg.
// CHECK-LABEL: func.func @keeps_elementwise_and_other_iter_args(
// CHECK:         arith.maximumf %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK:         arith.maximumf %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK-NOT:     arith.cmpf
func.func @keeps_elementwise_and_other_iter_args(%a: memref<256xf32>, %b: memref<256xf32>,
    %init: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %pad = ub.poison : f32
  %r:2 = scf.for %i = %c0 to %c256 step %c16 iter_args(%p = %init, %q = %init) -> (vector<16xf32>, vector<16xf32>) {
    %x = vector.transfer_read %a[%i], %pad {in_bounds = [true]} : memref<256xf32>, vector<16xf32>
    %y = vector.transfer_read %b[%i], %pad {in_bounds = [true]} : memref<256xf32>, vector<16xf32>
    %e = arith.maximumf %x, %y : vector<16xf32>
    vector.transfer_write %e, %b[%i] {in_bounds = [true]} : vector<16xf32>, memref<256xf32>
    // %p's max goes to %q's slot, %p gets a load.
    %s = arith.maximumf %x, %p : vector<16xf32>
    scf.yield %y, %s : vector<16xf32>, vector<16xf32>
  }
  return %r#0, %r#1 : vector<16xf32>, vector<16xf32>
}

// -----

// An f64 accumulator takes i64 bits.
// CHECK-LABEL: func.func @f64_accumulator(
// CHECK:         arith.cmpf ogt
// CHECK:         arith.extsi %{{.+}} : vector<8xi1> to vector<8xi64>
func.func @f64_accumulator(%m: memref<64xf64>, %init: vector<8xf64>) -> vector<8xf64> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %pad = ub.poison : f64
  %r = scf.for %i = %c0 to %c64 step %c8 iter_args(%acc = %init) -> (vector<8xf64>) {
    %x = vector.transfer_read %m[%i], %pad {in_bounds = [true]} : memref<64xf64>, vector<8xf64>
    %y = arith.maximumf %x, %acc : vector<8xf64>
    scf.yield %y : vector<8xf64>
  }
  return %r : vector<8xf64>
}
