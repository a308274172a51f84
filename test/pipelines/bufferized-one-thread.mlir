// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-bufferized{num-threads=1})" \
// RUN:   | FileCheck %s --check-prefix=ONE
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-to-bufferized{num-threads=2})" \
// RUN:   | FileCheck %s --check-prefix=TWO

// Scratch buffers of parallel tiles with one thread: the tiles are a plain
// loop before buffer-loop-hoisting, so the scratch buffer moves out of it and
// lowerline-plan-arena places it in the arena (lowerline.export needs every
// buffer there). With two threads each tile keeps its own allocation.
// ONE-LABEL: func.func @scratch_in_parallel_tiles(
// ONE-SAME:      lowerline.arena = array<i64: 256, 256>
// ONE-NOT:     memref.alloc
// ONE:         %[[SCRATCH:.+]] = memref.view %{{.+}}[%{{.+}}][] : memref<?xi8> to memref<4x16xf32>
// ONE-NOT:     memref.alloc
// ONE:         scf.for
// ONE:           linalg.exp ins(%{{.+}} : {{.+}}) outs(%[[SCRATCH]] : memref<4x16xf32>)
// ONE-NOT:     scf.forall
// ONE-NOT:     memref.alloc
// ONE:         return

// TWO-LABEL: func.func @scratch_in_parallel_tiles(
// TWO-SAME:      lowerline.arena = array<i64: 0, 0>
// TWO:         scf.forall
// TWO:           memref.alloc() {{.+}} : memref<4x16xf32>
// TWO:           memref.dealloc
func.func @scratch_in_parallel_tiles(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %out = tensor.empty() : tensor<8x16xf32>
  %r = scf.forall (%i) in (2) shared_outs(%o = %out) -> (tensor<8x16xf32>) {
    %row = affine.apply affine_map<(d0) -> (d0 * 4)>(%i)
    %in = tensor.extract_slice %x[%row, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
    %t = tensor.empty() : tensor<4x16xf32>
    %e = linalg.exp ins(%in : tensor<4x16xf32>) outs(%t : tensor<4x16xf32>) -> tensor<4x16xf32>
    %s = tensor.extract_slice %o[%row, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
    %a = linalg.add ins(%e, %in : tensor<4x16xf32>, tensor<4x16xf32>) outs(%s : tensor<4x16xf32>) -> tensor<4x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %a into %o[%row, 0] [4, 16] [1, 1] : tensor<4x16xf32> into tensor<8x16xf32>
    }
  }
  return %r : tensor<8x16xf32>
}
