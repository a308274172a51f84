// lowerline-gpu-map-to-launch turns every block forall that
// lowerline-gpu-distribute marked (lowerline.gpu_block_threads) into a
// gpu.launch of that many threads, its thread foralls into thread ids each
// followed by a barrier, and its shared-memory allocations (address space 3)
// into workgroup attributions of the launch.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-map-to-launch,cse)" \
// RUN:   --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-map-to-launch,cse)" \
// RUN:   --split-input-file 2>&1 | FileCheck %s --check-prefix=ERR

// Input: mapped IR in the shape lowerline-gpu-distribute leaves (simplified:
// scalar loads and stores instead of linalg ops).

// Two blocks of 32 threads. The block-local accumulator and the operand tile
// staged in each k step become the launch's two workgroup buffers (their
// deallocs go away); the fill, the copy, the compute and the store each end
// with a barrier, so a thread never reads the tile before all threads wrote
// it, nor overwrites it in the next step before all threads read it.
// CHECK-LABEL: func.func @staged(
// CHECK-SAME:      %[[A:[^:]+]]: memref<64x32xf32>, %[[OUT:[^:]+]]: memref<64xf32>)
// CHECK-DAG:     %[[BLOCKS:[a-z0-9_]+]] = arith.constant 2 : index
// CHECK-DAG:     %[[THREADS:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK-NOT:     scf.forall
// CHECK:         gpu.launch blocks({{[^)]+}}) in (%{{[^ ]+}} = %[[BLOCKS]], {{[^)]+}})
// CHECK-SAME:        threads({{[^)]+}}) in (%{{[^ ]+}} = %[[THREADS]], {{[^)]+}})
// CHECK-SAME:        workgroup(%[[ACC:[^ ]+]] : memref<32xf32, 3>, %[[TILE:[^ ]+]] : memref<32x16xf32, 3>) {
// CHECK:           gpu.block_id x
// CHECK:           %[[T:.+]] = gpu.thread_id x
// CHECK:           memref.store %{{.+}}, %[[ACC]][%{{.+}}] : memref<32xf32, 3>
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      scf.for
// CHECK:             memref.load %[[A]]
// CHECK:             memref.store %{{.+}}, %[[TILE]]
// CHECK:           }
// CHECK-NEXT:        gpu.barrier
// CHECK:             memref.load %[[TILE]]
// CHECK:             memref.load %[[ACC]]
// CHECK:             memref.store %{{.+}}, %[[ACC]]
// CHECK-NEXT:        gpu.barrier
// CHECK-NEXT:      }
// CHECK:           memref.load %[[ACC]]
// CHECK:           memref.store %{{.+}}, %[[OUT]]
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      gpu.terminator
// CHECK-NEXT:    }
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc
// CHECK:         return
func.func @staged(%a: memref<64x32xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%b) in (2) {
    %row0 = affine.apply affine_map<(d0) -> (d0 * 32)>(%b)
    %acc = memref.alloc() {alignment = 64 : i64} : memref<32xf32, 3>
    scf.forall (%t) in (32) {
      memref.store %zero, %acc[%t] : memref<32xf32, 3>
    } {mapping = [#gpu.thread<linear_dim_0>]}
    scf.for %k = %c0 to %c32 step %c16 {
      %tile = memref.alloc() : memref<32x16xf32, 3>
      scf.forall (%t) in (32) {
        %r = arith.addi %row0, %t : index
        scf.for %j = %c0 to %c16 step %c16 {
          %kj = arith.addi %k, %j : index
          %v = memref.load %a[%r, %kj] : memref<64x32xf32>
          memref.store %v, %tile[%t, %j] : memref<32x16xf32, 3>
        }
      } {mapping = [#gpu.thread<linear_dim_0>]}
      scf.forall (%t) in (32) {
        %s = memref.load %tile[%t, %c0] : memref<32x16xf32, 3>
        %old = memref.load %acc[%t] : memref<32xf32, 3>
        %new = arith.addf %old, %s : f32
        memref.store %new, %acc[%t] : memref<32xf32, 3>
      } {mapping = [#gpu.thread<linear_dim_0>]}
      memref.dealloc %tile : memref<32x16xf32, 3>
    }
    scf.forall (%t) in (32) {
      %v = memref.load %acc[%t] : memref<32xf32, 3>
      %r = arith.addi %row0, %t : index
      memref.store %v, %out[%r] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
    memref.dealloc %acc : memref<32xf32, 3>
  } {lowerline.gpu_block_threads = 32 : i64, mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// Two block foralls: two launches, each with its own thread count; a thread
// forall shorter than the block is guarded (threads 20..31 idle).
// CHECK-LABEL: func.func @two_launches(
// CHECK:         %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
// CHECK:         gpu.launch blocks({{[^)]+}}) in ({{[^)]+}}) threads({{[^)]+}}) in (%{{[^ ]+}} = %[[C64]], {{[^)]+}}) {
// CHECK-NOT:       workgroup
// CHECK:           gpu.thread_id x
// CHECK:           memref.store
// CHECK:           gpu.barrier
// CHECK:           gpu.terminator
// CHECK:         %[[C32:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK:         gpu.launch blocks({{[^)]+}}) in ({{[^)]+}}) threads({{[^)]+}}) in (%{{[^ ]+}} = %[[C32]], {{[^)]+}}) {
// CHECK:           %[[T:.+]] = gpu.thread_id x
// CHECK:           %[[N:.+]] = arith.constant 20 : index
// CHECK:           %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %[[N]] : index
// CHECK:           scf.if %[[IN]] {
// CHECK:             memref.store
// CHECK:           }
// CHECK:           gpu.barrier
// CHECK:           gpu.terminator
// CHECK-NOT:     scf.forall
// CHECK:         return
func.func @two_launches(%a: memref<64xf32>) {
  %cst = arith.constant 1.0 : f32
  scf.forall (%b) in (1) {
    scf.forall (%t) in (64) {
      memref.store %cst, %a[%t] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {lowerline.gpu_block_threads = 64 : i64, mapping = [#gpu.block<linear_dim_0>]}
  scf.forall (%b) in (1) {
    scf.forall (%t) in (20) {
      memref.store %cst, %a[%t] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {lowerline.gpu_block_threads = 32 : i64, mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// Not fired: a block forall without a thread count (not made by
// lowerline-gpu-distribute) is left as it is.
// CHECK-LABEL: func.func @unmarked(
// CHECK-NOT:     gpu.launch
// CHECK:         scf.forall (%{{.+}}) in (2) {
// CHECK:           scf.forall (%{{.+}}) in (32) {
// CHECK:             memref.store
// CHECK:           } {mapping = [#gpu.thread<linear_dim_0>]}
// CHECK:         } {mapping = [#gpu.block<linear_dim_0>]}
// CHECK-NOT:     gpu.launch
func.func @unmarked(%a: memref<64xf32>) {
  %cst = arith.constant 1.0 : f32
  scf.forall (%b) in (2) {
    scf.forall (%t) in (32) {
      %i = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%b, %t)
      memref.store %cst, %a[%i] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}

// -----

// Error: a thread forall needing more threads than the block has.
// ERR: error: mapping to gpu.launch failed:
// ERR-NEXT: loc("{{.+}}lowerline-gpu-map-to-launch.mlir":[[@LINE+7]]:{{[0-9]+}}): {{.+}} 64 overflows the number of available resources 32
// CHECK-NOT: func.func @too_many_threads

// expected-error @below {{mapping to gpu.launch failed}}
module {
  func.func @too_many_threads(%a: memref<64xf32>) {
    %cst = arith.constant 1.0 : f32
    scf.forall (%b) in (1) {
      scf.forall (%t) in (64) {
        memref.store %cst, %a[%t] : memref<64xf32>
      } {mapping = [#gpu.thread<linear_dim_0>]}
    } {lowerline.gpu_block_threads = 32 : i64, mapping = [#gpu.block<linear_dim_0>]}
    return
  }
}

// -----

// Error: a forall with no iteration (upstream's mapping asserted on it, an
// abort found by test_fuzz_mutations.py); the block forall of zero blocks.
// ERR: error: mapping to gpu.launch failed:
// ERR-NEXT: loc("{{.+}}lowerline-gpu-map-to-launch.mlir":[[@LINE+7]]:{{[0-9]+}}): dimension 0 of this scf.forall has no iteration (0 to -1 step 1); a GPU mapping needs at least one
// CHECK-NOT: func.func @no_iteration

// expected-error @below {{mapping to gpu.launch failed}}
module {
  func.func @no_iteration(%a: memref<64xf32>) {
    %cst = arith.constant 1.0 : f32
    scf.forall (%b) in (-1) {
      scf.forall (%t) in (32) {
        memref.store %cst, %a[%t] : memref<64xf32>
      } {mapping = [#gpu.thread<linear_dim_0>]}
    } {lowerline.gpu_block_threads = 32 : i64, mapping = [#gpu.block<linear_dim_0>]}
    return
  }
}

// -----

// Error: shared memory of dynamic size cannot be a workgroup attribution.
// ERR: lowerline-gpu-map-to-launch.mlir:[[@LINE+7]]:{{[0-9]+}}: error: a shared-memory buffer of dynamic size
// CHECK-NOT: func.func @dynamic_shared

func.func @dynamic_shared(%a: memref<64xf32>, %n: index) {
  %cst = arith.constant 1.0 : f32
  scf.forall (%b) in (1) {
    // expected-error @below {{a shared-memory buffer of dynamic size}}
    %s = memref.alloc(%n) : memref<?xf32, 3>
    scf.forall (%t) in (32) {
      memref.store %cst, %s[%t] : memref<?xf32, 3>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {lowerline.gpu_block_threads = 32 : i64, mapping = [#gpu.block<linear_dim_0>]}
  return
}
