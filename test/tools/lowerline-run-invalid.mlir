// RUN: not lowerline run %s 2>&1 | FileCheck %s --check-prefix=TWO
// RUN: not lowerline run %s --entry nope 2>&1 | FileCheck %s --check-prefix=NOPE
// RUN: not lowerline run %s --entry dynamic 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: not lowerline run %t.missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not lowerline run %S/Inputs/malformed.mlir 2>&1 | FileCheck %s --check-prefix=BAD

// Each mistake is one located line on stderr, exit 1, and never a traceback.

// TWO: lowerline: error: name the function to run with --entry (public functions: first, dynamic)
// TWO-NOT: Traceback
// NOPE: lowerline: error: no public function '@nope' (found: first, dynamic)
// DYN: lowerline: error: argument #0 of @dynamic has dynamic shape tensor<?xf32>; give it a static shape
// MISSING: lowerline: error: cannot open input file '{{.*}}.missing.mlir': No such file or directory
// BAD: lowerline: error: cannot parse {{.*}}malformed.mlir
// BAD-NEXT: {{.*}}malformed.mlir:4:10: error: use of undeclared SSA value name
// BAD-NOT: Traceback

func.func @first(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}
