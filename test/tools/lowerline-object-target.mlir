// RUN: lowerline object %s -o %t.host.o --shared %t.host.so | FileCheck %s --check-prefix=WROTE
// RUN: llvm-nm --defined-only %t.host.so | FileCheck %s
// RUN: lowerline object %s -o %t.arm.o --target cortex-a72 | FileCheck %s --check-prefix=ARM-WROTE
// RUN: llvm-nm --defined-only %t.arm.o | FileCheck %s
// RUN: %PYTHON -c "import sys; print('e_machine', int.from_bytes(open(sys.argv[1], 'rb').read(20)[18:], 'little'))" %t.arm.o | FileCheck %s --check-prefix=AARCH64
// RUN: lowerline object %s -o %t.n1.o --target neoverse-n1 | FileCheck %s --check-prefix=N1-WROTE
// RUN: llvm-objdump -d %t.n1.o | FileCheck %s --check-prefix=NEON
// RUN: not lowerline object %s -o %t.bad.o --target z80 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not ls %t.bad.o

// `lowerline object --target NAME` generates code for a CPU of
// lowerline.targets (its triple and LLVM CPU name), position independent;
// the default is the host. The input is already in the LLVM dialect.
// WROTE: wrote {{.*}}.host.o and {{.*}}.host.so
// ARM-WROTE: wrote {{.*}}.arm.o{{$}}
// CHECK: T fma
// AARCH64: e_machine 183
// N1-WROTE: wrote {{.*}}.n1.o{{$}}
// The 32 lanes of the FMA as 128-bit NEON vectors of 4 lanes.
// NEON: fmla v{{[0-9]+}}.4s
// UNKNOWN: lowerline: error: unknown CPU target 'z80'; targets: cpu, cpu:sapphirerapids
// UNKNOWN-NOT: Traceback

llvm.func @fma(%a: vector<32xf32>, %b: vector<32xf32>, %c: vector<32xf32>) -> vector<32xf32> {
  %r = llvm.intr.fmuladd(%a, %b, %c) : (vector<32xf32>, vector<32xf32>, vector<32xf32>) -> vector<32xf32>
  llvm.return %r : vector<32xf32>
}
