// RUN: rm -rf %t.dump %t.tmp
// RUN: not lowerline run %s --dump-dir %t.dump 2>&1 | FileCheck %s
// RUN: not lowerline-opt %t.dump/4-loops.mlir --pass-pipeline="builtin.module(lowerline-to-llvm)" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=REPLAY
// RUN: mkdir -p %t.tmp
// RUN: env TMPDIR=%t.tmp not lowerline run %s 2>&1 | FileCheck %s --check-prefix=SCRATCH
// RUN: ls %t.tmp | count 1

// A stage that fails late (llvm: LLVM has no i1 atomics, and
// lowerline-widen-i1-memrefs says so) is reproduced from its own input: the
// loops stage's dump, or without --dump-dir a file holding that IR (not this
// file, which the llvm stage's pipeline was never meant to run on).

// CHECK: lowerline: error: pass pipeline failed in 'lowerline-widen-i1-memrefs' on 'builtin.module'
// CHECK-NEXT: {{.*}}lowerline-run-stage-failure.mlir:[[#@LINE+13]]:8: error: 'memref.atomic_rmw' on an i1 memref is not supported by lowerline-widen-i1-memrefs
// CHECK-NEXT: reproduce with: lowerline-opt {{.*}}.dump/4-loops.mlir --pass-pipeline='builtin.module(lowerline-widen-i1-memrefs,
// CHECK-NOT: Traceback

// REPLAY: 4-loops.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'memref.atomic_rmw' on an i1 memref is not supported

// SCRATCH: reproduce with: lowerline-opt {{.*}}.tmp/lowerline-llvm-input-{{[^ ]*}}.mlir --pass-pipeline='builtin.module(lowerline-widen-i1-memrefs,

func.func @flag(%x: tensor<4xi1>) -> tensor<4xi1> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.alloc() : memref<4xi1>
  %b = tensor.extract %x[%c0] : tensor<4xi1>
  %r = memref.atomic_rmw ori %b, %m[%c0] : (i1, memref<4xi1>) -> i1
  %y = tensor.insert %r into %x[%c1] : tensor<4xi1>
  return %y : tensor<4xi1>
}
