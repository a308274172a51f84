// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize)" \
// RUN:   --split-input-file | FileCheck %s
// Alone, the pass finds no lowerline.vector_sizes and leaves every op as it is.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-vectorize)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=ALONE

// An 8x32 register tile of matmul + bias + relu: each k step is one row of B
// (vector<32xf32>) and 8 FMAs, one per row of the tile; the accumulators are
// the k loop's iter_arg, starting from the (folded) fill; the epilogue runs
// on the accumulator vectors before the one store of the tile.
// CHECK-LABEL: func.func @matmul_bias_relu(
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-DAG:     %[[ONE:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK:         scf.forall
// CHECK-NOT:       linalg.
// CHECK:           scf.for %[[I:[a-z0-9_]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[T:[a-z0-9_]+]] = %{{.+}}) -> (tensor<16x32xf32>)
// CHECK-NEXT:        %[[ACC:.+]] = scf.for %[[K:[a-z0-9_]+]] = %{{.+}} to %{{.+}} step %[[ONE]] iter_args(%{{.+}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK:               %[[BROW:.+]] = vector.transfer_read %{{.+}}[%[[K]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<32x64xf32>, vector<32xf32>
// CHECK-NOT:           linalg.
// CHECK-COUNT-8:       vector.fma %{{.+}}, %[[BROW]], %{{.+}} : vector<32xf32>
// CHECK-NOT:           vector.fma
// CHECK-NOT:           vector.transfer_write
// CHECK:               scf.yield %{{.+}} : vector<8x32xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:        %[[S:.+]] = arith.addf %[[ACC]], %{{.+}} : vector<8x32xf32>
// CHECK-NEXT:        %[[M:.+]] = arith.maximumf %[[S]], %[[ZERO]] : vector<8x32xf32>
// CHECK-NEXT:        %[[W:.+]] = vector.transfer_write %[[M]], %[[T]][%[[I]], %{{.+}}] {in_bounds = [true, true]} : vector<8x32xf32>, tensor<16x32xf32>
// CHECK-NEXT:        scf.yield %[[W]] : tensor<16x32xf32>
// CHECK-NOT:     linalg.
// CHECK-NOT:     lowerline.
// CHECK:         return

// ALONE-LABEL: func.func @matmul_bias_relu(
// ALONE:         linalg.fill ins(
// ALONE:         linalg.matmul ins(
// ALONE:         linalg.generic
// ALONE-NOT:     vector.
// ALONE:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @matmul_bias_relu(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %bias: tensor<64xf32>) -> tensor<16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x64xf32>) outs(%f : tensor<16x64xf32>) -> tensor<16x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<16x64xf32>, tensor<64xf32>) outs(%e : tensor<16x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}

// -----

// Accumulating into an argument: the accumulator is read once before the k
// loop, carried as its iter_arg (hoisted out of it) and written once after.
// CHECK-LABEL: func.func @accumulates_into_argument(
// CHECK-SAME:      %{{.+}}: tensor<8x4xf32>, %{{.+}}: tensor<4x32xf32>, %[[C:[a-z0-9]+]]: tensor<8x32xf32>)
// CHECK:         %[[INIT:.+]] = vector.transfer_read %[[C]][%{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true, true]} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK-NEXT:    %[[ACC:.+]] = scf.for %{{.+}} iter_args(%{{.+}} = %[[INIT]]) -> (vector<8x32xf32>)
// CHECK-NOT:       vector.transfer_read %[[C]]
// CHECK-NOT:       vector.transfer_write
// CHECK-COUNT-8:   vector.fma {{.+}} : vector<32xf32>
// CHECK-NOT:       vector.fma
// CHECK:           scf.yield %{{.+}} : vector<8x32xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[W:.+]] = vector.transfer_write %[[ACC]], %[[C]][%{{.+}}, %{{.+}}] {in_bounds = [true, true]} : vector<8x32xf32>, tensor<8x32xf32>
// CHECK-NEXT:    return %[[W]]

// ALONE-LABEL: func.func @accumulates_into_argument(
// ALONE-NEXT:    %[[R:.+]] = linalg.matmul ins(
// ALONE-NEXT:    return %[[R]]
func.func @accumulates_into_argument(%a: tensor<8x4xf32>, %b: tensor<4x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x32xf32>) outs(%c : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// An elementwise op is tiled to rows and vectorized on vector<32xf32>.
// Run alone, lowerline-vectorize leaves the plain linalg.generic unchanged.
// CHECK-LABEL: func.func @elementwise(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<8x32xf32>, %[[B:[a-z0-9]+]]: tensor<8x32xf32>)
// CHECK:         scf.for %[[I:[a-z0-9_]+]] =
// CHECK-NEXT:      %[[X:.+]] = vector.transfer_read %[[A]][%[[I]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<8x32xf32>, vector<32xf32>
// CHECK-NEXT:      %[[Y:.+]] = vector.transfer_read %[[B]][%[[I]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<8x32xf32>, vector<32xf32>
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[X]], %[[Y]] : vector<32xf32>
// CHECK-NEXT:      vector.transfer_write %[[S]]
// CHECK-NOT:     linalg.generic

// ALONE-LABEL: func.func @elementwise(
// ALONE-SAME:      %[[A:[a-z0-9]+]]: tensor<8x32xf32>, %[[B:[a-z0-9]+]]: tensor<8x32xf32>)
// ALONE-NEXT:    %[[E:.+]] = tensor.empty() : tensor<8x32xf32>
// ALONE-NEXT:    %[[R:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel"]} ins(%[[A]], %[[B]] : tensor<8x32xf32>, tensor<8x32xf32>) outs(%[[E]] : tensor<8x32xf32>) {
// ALONE-NEXT:    ^bb0(%[[X:.+]]: f32, %[[Y:.+]]: f32, %{{.+}}: f32):
// ALONE-NEXT:      %[[S:.+]] = arith.addf %[[X]], %[[Y]] : f32
// ALONE-NEXT:      linalg.yield %[[S]] : f32
// ALONE-NEXT:    } -> tensor<8x32xf32>
// ALONE-NEXT:    return %[[R]] : tensor<8x32xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%a: tensor<8x32xf32>, %b: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<8x32xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// An op that tile-and-fuse skipped (i32 matmul) carries no
// lowerline.vector_sizes and is left alone by the whole pipeline.
// CHECK-LABEL: func.func @untagged_i32_matmul(
// CHECK-NEXT:    %[[R:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x4xi32>, tensor<4x32xi32>) outs(%{{.+}} : tensor<8x32xi32>)
// CHECK-NEXT:    return %[[R]]

// ALONE-LABEL: func.func @untagged_i32_matmul(
// ALONE-NEXT:    %[[R:.+]] = linalg.matmul ins(
// ALONE-NEXT:    return %[[R]]
func.func @untagged_i32_matmul(%a: tensor<8x4xi32>, %b: tensor<4x32xi32>, %c: tensor<8x32xi32>) -> tensor<8x32xi32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x4xi32>, tensor<4x32xi32>) outs(%c : tensor<8x32xi32>) -> tensor<8x32xi32>
  return %0 : tensor<8x32xi32>
}

// -----

// Tiles narrower than planned (peeled pieces): a power-of-two width is
// vectorized at that width, unmasked; any other width keeps the planned
// vector size with a mask.
// CHECK-LABEL: func.func @narrow_pieces(
// ALONE-LABEL: func.func @narrow_pieces(
// ALONE:         %[[MASK:.+]] = arith.constant dense<[true, {{.+}}, false]> : vector<32xi1>
// ALONE:         vector.transfer_read %{{[a-z0-9]+}}[%{{[a-z0-9]+}}], %{{[a-z0-9]+}} {in_bounds = [true]} : tensor<8xf32>, vector<8xf32>
// ALONE:         vector.transfer_write %{{[a-z0-9]+}}, %{{[a-z0-9]+}}[%{{[a-z0-9]+}}] {in_bounds = [true]} : vector<8xf32>, tensor<8xf32>
// ALONE:         vector.transfer_read %{{[a-z0-9]+}}[%{{[a-z0-9]+}}], %{{[a-z0-9]+}}, %[[MASK]] {in_bounds = [true]} : tensor<24xf32>, vector<32xf32>
// ALONE-NOT:     linalg.add
func.func @narrow_pieces(%a: tensor<8xf32>, %b: tensor<24xf32>) -> (tensor<8xf32>, tensor<24xf32>) {
  %e8 = tensor.empty() : tensor<8xf32>
  %e24 = tensor.empty() : tensor<24xf32>
  %0 = linalg.add {lowerline.vector_sizes = array<i64: 32>} ins(%a, %a : tensor<8xf32>, tensor<8xf32>) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %1 = linalg.add {lowerline.vector_sizes = array<i64: 32>} ins(%b, %b : tensor<24xf32>, tensor<24xf32>) outs(%e24 : tensor<24xf32>) -> tensor<24xf32>
  return %0, %1 : tensor<8xf32>, tensor<24xf32>
}

// -----

// A convolution tile's accumulators start from a fill fused into it: a zero
// vector<8x1x32> written into the 4-D tile, read back as vector<8x32> (the
// unit row dropped). The read folds to the zero constant, so the tile needs
// no buffer for it. Upstream folds only reads whose map permutes or
// broadcasts the write's.
// ALONE-LABEL: func.func @folds_read_of_splat_write(
// ALONE:         %[[Z:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// ALONE-NOT:     vector.transfer_read
// ALONE:         return %[[Z]]
func.func @folds_read_of_splat_write(%t: tensor<1x8x1x32xf32>) -> vector<8x32xf32> {
  %z = arith.constant dense<0.0> : vector<8x1x32xf32>
  %c0 = arith.constant 0 : index
  %p = arith.constant 0.0 : f32
  %w = vector.transfer_write %z, %t[%c0, %c0, %c0, %c0] {in_bounds = [true, true, true]} : vector<8x1x32xf32>, tensor<1x8x1x32xf32>
  %r = vector.transfer_read %w[%c0, %c0, %c0, %c0], %p {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2, d3) -> (d1, d3)>} : tensor<1x8x1x32xf32>, vector<8x32xf32>
  return %r : vector<8x32xf32>
}

// -----

// A masked write whose mask covers the tensor (24 of 32 lanes into 24
// columns), read through a slice: folded too.
// ALONE-LABEL: func.func @folds_read_of_masked_splat_write_through_slice(
// ALONE:         %[[Z:.+]] = arith.constant dense<1.000000e+00> : vector<8x16xf32>
// ALONE-NOT:     vector.transfer_read
// ALONE:         return %[[Z]]
func.func @folds_read_of_masked_splat_write_through_slice(%t: tensor<1x8x1x24xf32>) -> vector<8x16xf32> {
  %one = arith.constant dense<1.0> : vector<8x1x32xf32>
  %m = vector.constant_mask [8, 1, 24] : vector<8x1x32xi1>
  %c0 = arith.constant 0 : index
  %p = arith.constant 0.0 : f32
  %w = vector.transfer_write %one, %t[%c0, %c0, %c0, %c0], %m {in_bounds = [true, true, true]} : vector<8x1x32xf32>, tensor<1x8x1x24xf32>
  %s = tensor.extract_slice %w[0, 0, 0, 8] [1, 8, 1, 16] [1, 1, 1, 1] : tensor<1x8x1x24xf32> to tensor<1x8x1x16xf32>
  %r = vector.transfer_read %s[%c0, %c0, %c0, %c0], %p {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2, d3) -> (d1, d3)>} : tensor<1x8x1x16xf32>, vector<8x16xf32>
  return %r : vector<8x16xf32>
}

// -----

// Not folded: the write covers half of the tensor (the rest keeps what the
// argument held), or its mask leaves lanes of the tensor out.
// ALONE-LABEL: func.func @keeps_read_of_partial_write(
// ALONE:         vector.transfer_read
// ALONE-LABEL: func.func @keeps_read_of_partially_masked_write(
// ALONE:         vector.transfer_read
func.func @keeps_read_of_partial_write(%t: tensor<1x8x1x64xf32>) -> vector<8x32xf32> {
  %z = arith.constant dense<0.0> : vector<8x1x32xf32>
  %c0 = arith.constant 0 : index
  %p = arith.constant 0.0 : f32
  %w = vector.transfer_write %z, %t[%c0, %c0, %c0, %c0] {in_bounds = [true, true, true]} : vector<8x1x32xf32>, tensor<1x8x1x64xf32>
  %r = vector.transfer_read %w[%c0, %c0, %c0, %c0], %p {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2, d3) -> (d1, d3)>} : tensor<1x8x1x64xf32>, vector<8x32xf32>
  return %r : vector<8x32xf32>
}
func.func @keeps_read_of_partially_masked_write(%t: tensor<1x8x1x32xf32>) -> vector<8x32xf32> {
  %z = arith.constant dense<0.0> : vector<8x1x32xf32>
  %m = vector.constant_mask [8, 1, 16] : vector<8x1x32xi1>
  %c0 = arith.constant 0 : index
  %p = arith.constant 0.0 : f32
  %w = vector.transfer_write %z, %t[%c0, %c0, %c0, %c0], %m {in_bounds = [true, true, true]} : vector<8x1x32xf32>, tensor<1x8x1x32xf32>
  %r = vector.transfer_read %w[%c0, %c0, %c0, %c0], %p {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2, d3) -> (d1, d3)>} : tensor<1x8x1x32xf32>, vector<8x32xf32>
  return %r : vector<8x32xf32>
}

// -----

// A long row reduction (split by tile-and-fuse into chunks of 64) adds
// vector<64xf32> chunks into a loop-carried accumulator and reduces it once
// per row: no vector as long as the row.
// CHECK-LABEL: func.func @row_sum_in_chunks(
// CHECK:         %[[SUM:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}) -> (vector<1x64xf32>)
// CHECK:           vector.transfer_read {{.+}} : tensor<8x4096xf32>, vector<64xf32>
// CHECK:           arith.addf {{.+}} : vector<64xf32>
// CHECK:         vector.extract %[[SUM]][0] : vector<64xf32> from vector<1x64xf32>
// CHECK:         vector.reduction <add>, {{.+}} : vector<64xf32> into f32
// CHECK-NOT:     vector<4096xf32>
func.func @row_sum_in_chunks(%a: tensor<8x4096xf32>) -> tensor<8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<8x4096xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A read of another tensor at computed indices (bilinear upsampling's taps:
// the row from a table indexed by the row loop, the column from a table
// indexed by the column loop) is vectorized along the row: the column
// indices become a vector, the read a vector.gather. Without the
// vectorizer's nd-extract option the op stays scalar loops.
// CHECK-LABEL: func.func @gather_along_row(
// CHECK:         scf.forall
// CHECK:           vector.gather %{{.+}} : tensor<8x16x9x11xf32>, vector<1x1x1x22xindex>, vector<1x1x1x22xi1>, vector<1x1x1x22xf32> into vector<1x1x1x22xf32>
// CHECK-NOT:       tensor.extract %{{.+}} : tensor<8x16x9x11xf32>
// CHECK:         return
func.func @gather_along_row(%x: tensor<8x16x9x11xf32>, %rows: tensor<18xi64>, %cols: tensor<22xi64>) -> tensor<8x16x18x22xf32> {
  %e = tensor.empty() : tensor<8x16x18x22xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (h)>, affine_map<(n, c, h, w) -> (w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%rows, %cols : tensor<18xi64>, tensor<22xi64>) outs(%e : tensor<8x16x18x22xf32>) {
  ^bb0(%row: i64, %col: i64, %out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %h = arith.index_cast %row : i64 to index
    %w = arith.index_cast %col : i64 to index
    %v = tensor.extract %x[%n, %c, %h, %w] : tensor<8x16x9x11xf32>
    linalg.yield %v : f32
  } -> tensor<8x16x18x22xf32>
  return %r : tensor<8x16x18x22xf32>
}

// ALONE-LABEL: func.func @gather_along_row(
// ALONE:         linalg.generic
// ALONE:           tensor.extract
// ALONE-NOT:     vector.gather

// -----

// A tile wider than its planned vector shape (a dynamic M's 1-row remainder
// piece, widened along N to 1x64 where the register tile is 8x32) is
// vectorized at its own static shape: whole vectors, no mask.
// CHECK-LABEL: func.func @vectorizes_a_wider_tile(
// CHECK:         vector.transfer_read {{.+}} vector<64xf32>

// ALONE-LABEL: func.func @vectorizes_a_wider_tile(
// ALONE-NOT:     linalg.generic
// ALONE-NOT:     arith.cmpi
// ALONE:         vector.transfer_read {{.+}} vector<64xf32>
// ALONE-NOT:     arith.cmpi
// ALONE:         return
func.func @vectorizes_a_wider_tile(%x: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1x64xf32>) outs(%x : tensor<1x64xf32>) attrs = {lowerline.vector_sizes = array<i64: 8, 32>} {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<1x64xf32>
  return %r : tensor<1x64xf32>
}

// -----

// A dynamic M's 7-row piece (lowerline.exact_rows, set by
// lowerline-tile-and-fuse) planned 8x32: its rows index no operand's
// innermost dim, so they are vectorized as 7 whole rows, no mask. The same
// tile without the marker (a static tile's remainder) keeps the planned 8
// rows with a mask (a row that is not a power of two stays masked there).
// ALONE-LABEL: func.func @exact_rows_of_a_row_piece(
// ALONE-NOT:     vector<8x32xf32>
// ALONE:         vector.transfer_write {{.+}} {in_bounds = [true, true]} : vector<7x32xf32>, tensor<7x32xf32>
// ALONE-LABEL: func.func @masked_rows_without_marker(
// ALONE:         vector.transfer_write {{.+}} : vector<8x32xf32>, tensor<7x32xf32>
func.func @exact_rows_of_a_row_piece(%x: tensor<7x32xf32>) -> tensor<7x32xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<7x32xf32>) outs(%x : tensor<7x32xf32>) attrs = {lowerline.exact_rows, lowerline.vector_sizes = array<i64: 8, 32>} {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<7x32xf32>
  return %r : tensor<7x32xf32>
}
func.func @masked_rows_without_marker(%x: tensor<7x32xf32>) -> tensor<7x32xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<7x32xf32>) outs(%x : tensor<7x32xf32>) attrs = {lowerline.vector_sizes = array<i64: 8, 32>} {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<7x32xf32>
  return %r : tensor<7x32xf32>
}
