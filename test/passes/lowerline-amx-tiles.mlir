// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-amx-tiles{explain=1})" \
// RUN:   --split-input-file 2>%t.explain | FileCheck %s
// RUN: FileCheck %s --check-prefix=EXPLAIN < %t.explain

#a = affine_map<(m, n, q, r) -> (m, q, r)>
#b = affine_map<(m, n, q, r) -> (q, n, r)>
#c = affine_map<(m, n, q, r) -> (m, n)>

// 48x48 in 16x16 tiles, k of 128 bytes: a 2x2 block, a 2x1 and a 1x2 block
// at the edges and a 1x1 corner; in each, the accumulators are loaded from
// C, carried through two 64-byte steps of k (one A tile per block row, one
// B tile per block column, each used by the whole row or column), and stored.
// EXPLAIN: lowerline-amx-tiles.mlir:[[@LINE+25]]:3: remark: linalg.generic: on AMX tiles
// CHECK-LABEL: func.func @tiles(
// CHECK-SAME:      %[[A:.+]]: memref<48x32x4xi8>, %[[B:.+]]: memref<32x48x4xi8>, %[[C:.+]]: memref<48x48xi32>
// CHECK-DAG:     %[[A2:.+]] = memref.collapse_shape %[[A]] {{\[\[}}0], [1, 2]] : memref<48x32x4xi8> into memref<48x128xi8>
// CHECK-DAG:     %[[B2:.+]] = memref.collapse_shape %[[B]] {{\[\[}}0], [1, 2]] : memref<32x48x4xi8> into memref<32x192xi8>
// The 2x2 block: 4 accumulators, a k loop of 2 A + 2 B loads and 4 products.
// CHECK-COUNT-4: amx.tile_load %[[C]][{{.+}}] : memref<48x48xi32> into !amx.tile<16x16xi32>
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(
// CHECK-COUNT-2:   amx.tile_load %[[A2]][{{.+}}] : memref<48x128xi8> into !amx.tile<16x64xi8>
// CHECK:           arith.divui
// CHECK-COUNT-2:   amx.tile_load %[[B2]][{{.+}}] : memref<32x192xi8> into !amx.tile<16x64xi8>
// CHECK-COUNT-4:   amx.tile_muli
// CHECK:           scf.yield
// CHECK-COUNT-4: amx.tile_store %[[C]]
// The 2x1 block (rows 0-31, columns 32-47), then the 1x2 and the corner.
// CHECK-COUNT-2: amx.tile_load %[[C]]
// CHECK:         scf.for
// CHECK-COUNT-2:   amx.tile_muli
// CHECK-COUNT-2: amx.tile_store %[[C]]
// CHECK-COUNT-2: amx.tile_store %[[C]]
// CHECK:         amx.tile_muli
// CHECK:         amx.tile_store %[[C]]
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @tiles(%a: memref<48x32x4xi8>, %b: memref<32x48x4xi8>, %c: memref<48x48xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<48x32x4xi8>, memref<32x48x4xi8>) outs(%c : memref<48x48xi32>) attrs = {lowerline.amx_tiles} {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %xe = arith.extsi %x : i8 to i32
    %ye = arith.extsi %y : i8 to i32
    %p = arith.muli %xe, %ye : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}

// -----

#a = affine_map<(m, n, q, r) -> (m, q, r)>
#b = affine_map<(m, n, q, r) -> (q, n, r)>
#c = affine_map<(m, n, q, r) -> (m, n)>

// 96 rows: the 2x1 blocks of rows are a parallel loop (three blocks of 32 rows).
// CHECK-LABEL: func.func @row_blocks(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (96, 16) step (32, 16) {
// CHECK-COUNT-2:   amx.tile_load %{{.+}} : memref<96x16xi32> into !amx.tile<16x16xi32>
// CHECK:           scf.for
// CHECK-COUNT-2:     amx.tile_muli
func.func @row_blocks(%a: memref<96x16x4xi8>, %b: memref<16x16x4xi8>, %c: memref<96x16xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<96x16x4xi8>, memref<16x16x4xi8>) outs(%c : memref<96x16xi32>) attrs = {lowerline.amx_tiles} {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %xe = arith.extsi %x : i8 to i32
    %ye = arith.extsi %y : i8 to i32
    %p = arith.muli %xe, %ye : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}

// -----

#a = affine_map<(m, n, q, r) -> (m, q, r)>
#b = affine_map<(m, n, q, r) -> (q, n, r)>
#c = affine_map<(m, n, q, r) -> (m, n)>

// Not in whole tiles (13 rows; lowerline-amx-matmul pads to them):
// left as loops, no marker.
// EXPLAIN: lowerline-amx-tiles.mlir:[[@LINE+6]]:3: remark: linalg.generic: left as loops: 13x16 (64 bytes of k) is not in whole 16x16 tiles of 64 bytes of k
// CHECK-LABEL: func.func @partial_tiles(
// CHECK-NOT:     amx.
// CHECK:         linalg.generic
// CHECK-NOT:     llvm.mlir.global
func.func @partial_tiles(%a: memref<13x16x4xi8>, %b: memref<16x16x4xi8>, %c: memref<13x16xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<13x16x4xi8>, memref<16x16x4xi8>) outs(%c : memref<13x16xi32>) attrs = {lowerline.amx_tiles} {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %xe = arith.extsi %x : i8 to i32
    %ye = arith.extsi %y : i8 to i32
    %p = arith.muli %xe, %ye : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}
