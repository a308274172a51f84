// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-winograd-conv{target=sapphirerapids explain=1}))" \
// RUN:   --split-input-file 2>%t.explain | FileCheck %s
// RUN: FileCheck %s --check-prefix=EXPLAIN < %t.explain
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-winograd-conv{target=haswell}))" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=AVX2

// A 3x3 stride-1 convolution with a zero init and constant weights: the
// filter is transformed now (a 36 x F x C constant), the input by B^T d B
// along rows (whole rows combined, then split into the 4-column phases of the
// tiles), the 36 products are one batch_matmul, and A^T M A interleaves the
// four columns of each tile back into output rows. One 8 x 8 output is 4
// tiles, fewer than a vector's 16 lanes: V and M are stored tiles first (36
// x T x C and 36 x T x F: each vector of tiles written across the rows of its
// plane, M read so), U transposed (36 x C x F), so that the matmuls are
// T x C by C x F and vectorize along the filters. (@whole_vector_tiles, with
// 48 tiles, keeps F x C by C x T.)
// EXPLAIN: lowerline-winograd-conv.mlir:[[@LINE+24]]:8: remark: linalg.conv_2d_nchw_fchw: rewritten as Winograd F(4x4, 3x3): 36 x 4x16 by 16x16 (tiles first) matmuls
// CHECK-LABEL: func.func @rewritten(
// CHECK-SAME:      %[[X:.+]]: tensor<1x16x10x10xf32>
// CHECK:         %[[V:.+]] = scf.forall (%[[N:.+]], %[[TY:.+]]) in (1, 2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<36x4x16xf32>)
// CHECK:           scf.for
// CHECK:             vector.transfer_read %[[X]][%[[N]], %{{.+}}, %{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<1x16x10x10xf32>, vector<10xf32>
// CHECK:             vector.shuffle %{{.+}}, %{{.+}} [0, 4] : vector<10xf32>, vector<10xf32>
// CHECK:             vector.shuffle %{{.+}}, %{{.+}} [5, 9] : vector<10xf32>, vector<10xf32>
// CHECK:             vector.transfer_write {{.+}} permutation_map = {{.+}} : vector<2xf32>, tensor<36x2x16xf32>
// CHECK:           tensor.parallel_insert_slice
// CHECK:         %[[U:.+]] = arith.constant dense_resource<{{.+}}> : tensor<36x16x16xf32>
// CHECK:         %[[M:.+]] = linalg.batch_matmul ins(%[[V]], %[[U]] : tensor<36x4x16xf32>, tensor<36x16x16xf32>)
// CHECK:         %[[Y:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<1x16x8x8xf32>)
// CHECK:             vector.transfer_read %[[M]]{{.+}} : tensor<36x4x16xf32>, vector<2xf32>
// CHECK:             vector.shuffle %{{.+}}, %{{.+}} [0, 2, 1, 3] : vector<2xf32>, vector<2xf32>
// CHECK:             vector.shuffle %{{.+}}, %{{.+}} [0, 1, 4, 5, 2, 3, 6, 7] : vector<4xf32>, vector<4xf32>
// CHECK:             vector.transfer_write {{.+}} : vector<8xf32>, tensor<1x16x4x8xf32>
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         return %[[Y]]
func.func @rewritten(%x: tensor<1x16x10x10xf32>) -> tensor<1x16x8x8xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %c : tensor<1x16x8x8xf32>
}

// -----

// Wider rows are split into vectors of 16 tiles: 72 columns are 18 tiles, a
// vector of 16 (a row of 66 floats) and one of 2 (10 floats) padded to 16
// lanes with copies of its first tile; a tile row takes 32 columns of T.
// V's and M's 36 planes would be 2 KiB apart (16 rows of 32 floats): a 17th,
// zero row puts them on 32 different L1 sets (U gets a zero filter and a
// zero channel to match); the transforms still loop over the 16 real rows.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: rewritten as Winograd F(4x4, 3x3): 36 x 17x17 by 17x32 matmuls (0.7 MFLOP), planes padded from 16x16 (off 4 KiB multiples) [lowerline-winograd-conv]
// CHECK-LABEL: func.func @long_rows(
// CHECK:         scf.forall {{.+}} -> (tensor<36x17x32xf32>)
// CHECK:         vector.transfer_read {{.+}} vector<66xf32>
// CHECK:         vector.transfer_write {{.+}} : vector<16xf32>, tensor<36x16x32xf32>
// CHECK:         vector.transfer_read {{.+}} vector<10xf32>
// CHECK:         vector.shuffle %{{.+}}, %{{.+}} [0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] : vector<10xf32>, vector<10xf32>
// CHECK:         linalg.batch_matmul ins({{.+}} : tensor<36x17x17xf32>, tensor<36x17x32xf32>)
// CHECK:         vector.transfer_read {{.+}} : tensor<36x17x32xf32>, vector<16xf32>
// CHECK:         vector.transfer_write {{.+}} : vector<64xf32>, tensor<1x16x4x72xf32>
// CHECK:         vector.transfer_write {{.+}} : vector<8xf32>, tensor<1x16x4x72xf32>
// With 256-bit vectors (8 lanes): vectors of 8 tiles, 24 columns per tile row.
// AVX2-LABEL: func.func @long_rows(
// AVX2:         scf.forall {{.+}} -> (tensor<36x17x24xf32>)
// AVX2:         vector.transfer_read {{.+}} vector<34xf32>
// AVX2:         vector.transfer_read {{.+}} vector<34xf32>
// AVX2:         vector.transfer_read {{.+}} vector<10xf32>
// AVX2:         linalg.batch_matmul ins({{.+}} : tensor<36x17x17xf32>, tensor<36x17x24xf32>)
// AVX2:         vector.transfer_write {{.+}} : vector<32xf32>, tensor<1x16x4x72xf32>
func.func @long_rows(%x: tensor<1x16x6x74xf32>) -> tensor<1x16x4x72xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x4x72xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x4x72xf32>) -> tensor<1x16x4x72xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x6x74xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x4x72xf32>) -> tensor<1x16x4x72xf32>
  return %c : tensor<1x16x4x72xf32>
}

// -----

// Not rewritten: what F(4x4, 3x3) cannot compute, or would not pay for.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: not rewritten as Winograd: strided or dilated [lowerline-winograd-conv]
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: not rewritten as Winograd: 8 -> 8 channels: below min-channels=16 [lowerline-winograd-conv]
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: not rewritten as Winograd: a 1x1 window (F(4x4, 3x3) needs 3x3) [lowerline-winograd-conv]
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: not rewritten as Winograd: the filter is not a constant with known bytes [lowerline-winograd-conv]
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-4: linalg.conv_2d_nchw_fchw
// CHECK-NOT:     linalg.batch_matmul
func.func @kept(%x: tensor<1x16x18x18xf32>, %x8: tensor<1x8x10x10xf32>, %x6: tensor<1x16x8x8xf32>,
                %wv: tensor<16x16x3x3xf32>)
    -> (tensor<1x16x8x8xf32>, tensor<1x8x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %w8 = arith.constant dense<0.5> : tensor<8x8x3x3xf32>
  %w1 = arith.constant dense<0.5> : tensor<16x16x1x1xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %strided = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x18x18xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %e8 = tensor.empty() : tensor<1x8x8x8xf32>
  %f8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %narrow = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x8, %w8 : tensor<1x8x10x10xf32>, tensor<8x8x3x3xf32>) outs(%f8 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %pointwise = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x6, %w1 : tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) outs(%f : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %x10 = tensor.extract_slice %x[0, 0, 0, 0] [1, 16, 10, 10] [1, 1, 1, 1] : tensor<1x16x18x18xf32> to tensor<1x16x10x10xf32>
  %variable = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x10, %wv : tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %strided, %narrow, %pointwise, %variable
      : tensor<1x16x8x8xf32>, tensor<1x8x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
}

// -----

// An init that is not a zero fill (a bias broadcast into the output): the
// output transform writes into it, adding each row to what it holds.
// CHECK-LABEL: func.func @accumulates_into_the_init(
// CHECK-SAME:      %[[ACC:[^:]+]]: tensor<1x16x8x8xf32>
// CHECK:         scf.forall {{.+}} -> (tensor<36x4x16xf32>)
// CHECK:         %[[M:.+]] = linalg.batch_matmul
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 2) shared_outs(%{{.+}} = %[[ACC]]) -> (tensor<1x16x8x8xf32>)
// CHECK:             %[[OLD:.+]] = vector.transfer_read %{{.+}} : tensor<1x16x4x8xf32>, vector<8xf32>
// CHECK:             %[[SUM:.+]] = arith.addf %[[OLD]], %{{.+}} : vector<8xf32>
// CHECK:             vector.transfer_write %[[SUM]], {{.+}} : vector<8xf32>, tensor<1x16x4x8xf32>
func.func @accumulates_into_the_init(%x: tensor<1x16x10x10xf32>, %acc: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) outs(%acc : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %c : tensor<1x16x8x8xf32>
}

// -----

// The convolution's only user is an elementwise epilogue (batch norm with a
// per-channel scale, a residual add, ReLU): the output transform applies its
// body to each row (per-channel operands broadcast, same-shape ones read at
// the row, scalars from outside splat) and writes into its destination.
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: rewritten as Winograd {{.+}} matmuls ({{.+}} MFLOP), epilogue linalg.generic at {{.+}} fused
// CHECK-LABEL: func.func @fuses_the_epilogue(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x16x10x10xf32>, %[[RES:[^:]+]]: tensor<1x16x8x8xf32>, %[[SCALE:[^:]+]]: tensor<16xf32>
// CHECK:         linalg.batch_matmul
// CHECK:         %[[DEST:.+]] = tensor.empty() : tensor<1x16x8x8xf32>
// CHECK:         scf.forall (%[[N:.+]], %[[TY:.+]]) in (1, 2) shared_outs(%{{.+}} = %[[DEST]]) -> (tensor<1x16x8x8xf32>)
// CHECK:           scf.for %[[F:[^ ]+]] =
// CHECK:             %[[ROW:.+]] = vector.shuffle {{.+}} : vector<4xf32>, vector<4xf32>
// CHECK:             %[[S:.+]] = tensor.extract %[[SCALE]][%[[F]]] : tensor<16xf32>
// CHECK:             %[[SV:.+]] = vector.broadcast %[[S]] : f32 to vector<8xf32>
// CHECK:             %[[R:.+]] = vector.transfer_read %[[RES]][%[[N]], %[[F]], %{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<1x16x8x8xf32>, vector<8xf32>
// CHECK:             %[[M:.+]] = arith.mulf %[[ROW]], %[[SV]] : vector<8xf32>
// CHECK:             %[[A:.+]] = arith.addf %[[M]], %[[R]] : vector<8xf32>
// CHECK:             %[[Z:.+]] = vector.broadcast %{{.+}} : f32 to vector<8xf32>
// CHECK:             %[[Y:.+]] = arith.maximumf %[[A]], %[[Z]] : vector<8xf32>
// CHECK:             vector.transfer_write %[[Y]], {{.+}} : vector<8xf32>, tensor<1x16x4x8xf32>
// CHECK-NOT:     linalg.generic
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch4 = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @fuses_the_epilogue(%x: tensor<1x16x10x10xf32>, %res: tensor<1x16x8x8xf32>, %scale: tensor<16xf32>) -> tensor<1x16x8x8xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %e2 = tensor.empty() : tensor<1x16x8x8xf32>
  %y = linalg.generic {indexing_maps = [#id4, #ch4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c, %scale, %res : tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<1x16x8x8xf32>) outs(%e2 : tensor<1x16x8x8xf32>) {
  ^bb0(%in: f32, %s: f32, %r: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    %a = arith.addf %m, %r : f32
    %relu = arith.maximumf %a, %zero : f32
    linalg.yield %relu : f32
  } -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}

// -----

// An epilogue that reads the result through another map (a transpose) would
// need other rows than the one at hand: it stays a linalg.generic.
// CHECK-LABEL: func.func @keeps_a_transposing_epilogue(
// CHECK:         linalg.batch_matmul
// CHECK:         %[[OUT:.+]] = scf.forall {{.+}} -> (tensor<1x16x8x8xf32>)
// CHECK:         linalg.generic {{.+}} ins(%[[OUT]] : tensor<1x16x8x8xf32>)
#tr4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
#id4b = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @keeps_a_transposing_epilogue(%x: tensor<1x16x10x10xf32>) -> tensor<1x16x8x8xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %e2 = tensor.empty() : tensor<1x16x8x8xf32>
  %y = linalg.generic {indexing_maps = [#tr4, #id4b], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<1x16x8x8xf32>) outs(%e2 : tensor<1x16x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %relu = arith.maximumf %in, %zero : f32
    linalg.yield %relu : f32
  } -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}

// -----

// Output sides that 4 does not divide (6x6: 2x2 tiles, the last ones hanging
// 2 rows and 2 columns over the edge): input rows past the bottom read as
// zeros (a clamped read, then a select), columns past the right edge as
// zeros (an out-of-bounds read, printed without in_bounds); the last tile
// row's slice of the output has min(4, 6 - 4 ty) rows, rows 2 and 3 are
// stored only where they exist, and the lanes past the right edge are dropped.
// CHECK-LABEL: func.func @ragged_edges(
// CHECK:         scf.forall {{.+}} -> (tensor<36x4x16xf32>)
// CHECK:           vector.transfer_read %{{[^{]+}} : tensor<1x16x8x8xf32>, vector<10xf32>
// CHECK:           %[[CLAMPED:.+]] = arith.minui %{{.+}}, %{{.+}} : index
// CHECK:           %[[R4:.+]] = vector.transfer_read %{{.+}}[%{{.+}}, %{{.+}}, %[[CLAMPED]], %{{.+}}], %{{[^{]+}} : tensor<1x16x8x8xf32>, vector<10xf32>
// CHECK:           %[[PAST:.+]] = arith.cmpi ugt
// CHECK:           arith.select %[[PAST]], %{{.+}}, %[[R4]] : vector<10xf32>
// CHECK:         linalg.batch_matmul
// CHECK:         scf.forall {{.+}} -> (tensor<1x16x6x6xf32>)
// CHECK:           %[[ROWS:.+]] = arith.minui
// CHECK:           tensor.extract_slice %{{.+}}[%{{.+}}, 0, %{{.+}}, 0] [1, 16, %[[ROWS]], 6] [1, 1, 1, 1] : tensor<1x16x6x6xf32> to tensor<1x16x?x6xf32>
// CHECK:             vector.transfer_write %{{[^{]+}} : vector<8xf32>, tensor<1x16x?x6xf32>
// CHECK:             vector.transfer_write %{{[^{]+}} : vector<8xf32>, tensor<1x16x?x6xf32>
// CHECK:             %[[EXISTS:.+]] = arith.cmpi ult
// CHECK:             scf.if %[[EXISTS]] -> (tensor<1x16x?x6xf32>)
// CHECK:               vector.transfer_write %{{[^{]+}} : vector<8xf32>, tensor<1x16x?x6xf32>
// CHECK:             scf.if
func.func @ragged_edges(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x6x6xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x6x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  return %c : tensor<1x16x6x6xf32>
}

// -----

// One 20 x 20 output: 5 tile rows of 8 columns (5 tiles rounded up to a
// power of two) are 40 columns of T, rounded up to whole vectors: 48, the
// last 8 zero-filled. 40 has no register tile of whole vectors; 48 has 16.
// (The planes get a 17th row, zero-filled too, as in @long_rows.)
// CHECK-LABEL: func.func @whole_vector_tiles(
// CHECK:         %[[V:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (1, 5) {{.+}} -> (tensor<36x17x48xf32>)
// CHECK:         %[[TAIL:.+]] = tensor.extract_slice %[[V]][0, 0, 40] [36, 17, 8] [1, 1, 1]
// CHECK:         %[[ZEROS:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[TAIL]] : tensor<36x17x8xf32>)
// CHECK:         %[[PADDED:.+]] = tensor.insert_slice %[[ZEROS]] into %[[V]][0, 0, 40] [36, 17, 8] [1, 1, 1]
// CHECK:         %[[ROW:.+]] = tensor.extract_slice %[[PADDED]][0, 16, 0] [36, 1, 48] [1, 1, 1]
// CHECK:         %[[ZROW:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[ROW]] : tensor<36x1x48xf32>)
// CHECK:         %[[PLANES:.+]] = tensor.insert_slice %[[ZROW]] into %[[PADDED]][0, 16, 0] [36, 1, 48] [1, 1, 1]
// CHECK:         linalg.batch_matmul ins(%{{.+}}, %[[PLANES]] : tensor<36x17x17xf32>, tensor<36x17x48xf32>)
// Three images: 120 columns, 128 of T.
// CHECK-LABEL: func.func @whole_vector_tiles_batch(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (3, 5) {{.+}} -> (tensor<36x17x128xf32>)
// CHECK:         tensor.extract_slice %{{.+}}[0, 0, 120] [36, 17, 8] [1, 1, 1]
// Eight images: 320 columns, whole vectors already: no tail to fill (only
// the zero row).
// CHECK-LABEL: func.func @whole_vector_tiles_no_tail(
// CHECK:         %[[V8:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (8, 5) {{.+}} -> (tensor<36x17x320xf32>)
// CHECK-NOT:     tensor.insert_slice {{.+}}[0, 0,
// CHECK:         %[[Z8:.+]] = tensor.insert_slice %{{.+}} into %[[V8]][0, 16, 0] [36, 1, 320] [1, 1, 1]
// CHECK-NOT:     tensor.insert_slice
// CHECK:         linalg.batch_matmul ins(%{{.+}}, %[[Z8]] : tensor<36x17x17xf32>, tensor<36x17x320xf32>)
func.func @whole_vector_tiles(%x: tensor<1x16x22x22xf32>) -> tensor<1x16x20x20xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x20x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x20x20xf32>) -> tensor<1x16x20x20xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x22x22xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x20x20xf32>) -> tensor<1x16x20x20xf32>
  return %c : tensor<1x16x20x20xf32>
}

func.func @whole_vector_tiles_batch(%x: tensor<3x16x22x22xf32>) -> tensor<3x16x20x20xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x16x20x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x16x20x20xf32>) -> tensor<3x16x20x20xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<3x16x22x22xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<3x16x20x20xf32>) -> tensor<3x16x20x20xf32>
  return %c : tensor<3x16x20x20xf32>
}

func.func @whole_vector_tiles_no_tail(%x: tensor<8x16x22x22xf32>) -> tensor<8x16x20x20xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16x20x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16x20x20xf32>) -> tensor<8x16x20x20xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<8x16x22x22xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<8x16x20x20xf32>) -> tensor<8x16x20x20xf32>
  return %c : tensor<8x16x20x20xf32>
}

// -----

// A dynamic batch (lowerline.compile(..., dynamic=...)): the transforms loop
// over the images the input has, and T holds 16 columns per image (4 tile
// rows of 4), so the matmul's N is 16 x batch: the tiles of one image are
// those of the static build. V and M are slices of buffers of an odd number
// of rows (17, 33) of an odd number of 64-byte lines (T rounded up at run
// time): their planes lie an odd number of lines apart, never in one L1 set
// (T = 16 x 8 put them 8 KiB apart); the matmul's K, M and N stay 16, 32, T.
// EXPLAIN: lowerline-winograd-conv.mlir:[[@LINE+26]]:8: remark: linalg.conv_2d_nchw_fchw: rewritten as Winograd F(4x4, 3x3): 36 x 32x16 by 16x16 x batch matmuls
// CHECK-DAG:     #[[ODD_LINES:.+]] = affine_map<()[s0] -> (((s0 ceildiv 16) floordiv 2) * 32 + 16)>
// CHECK-LABEL: func.func @dynamic_batch(
// CHECK-SAME:      %[[X:.+]]: tensor<?x16x18x18xf32>
// CHECK:         tensor.empty(%{{.+}}) : tensor<?x32x16x16xf32>
// CHECK:         %[[B:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x16x18x18xf32>
// CHECK:         %[[T:.+]] = arith.muli %[[B]], %{{.+}} : index
// CHECK:         %[[VROW:.+]] = affine.apply #[[ODD_LINES]]()[%[[T]]]
// CHECK:         %[[VBUF:.+]] = tensor.empty(%[[VROW]]) : tensor<36x17x?xf32>
// CHECK:         %[[VSLICE:.+]] = tensor.extract_slice %[[VBUF]][0, 0, 0] [36, 16, %[[T]]] [1, 1, 1] : tensor<36x17x?xf32> to tensor<36x16x?xf32>
// CHECK:         %[[V:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (%[[B]], 4) shared_outs(%{{.+}} = %[[VSLICE]]) -> (tensor<36x16x?xf32>)
// CHECK-NOT:     scf.forall (
// CHECK:         %[[MBUF:.+]] = tensor.empty(%{{.+}}) : tensor<36x33x?xf32>
// CHECK:         %[[MSLICE:.+]] = tensor.extract_slice %[[MBUF]][0, 0, 0] [36, 32, %{{.+}}] [1, 1, 1] : tensor<36x33x?xf32> to tensor<36x32x?xf32>
// CHECK:         %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[MSLICE]] : tensor<36x32x?xf32>)
// CHECK:         %[[M:.+]] = linalg.batch_matmul ins(%{{.+}}, %[[V]] : tensor<36x32x16xf32>, tensor<36x16x?xf32>) outs(%[[ACC]] : tensor<36x32x?xf32>)
// CHECK:         %[[Y:.+]] = scf.forall (%{{.+}}, %{{.+}}) in (%[[B]], 4) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<?x32x16x16xf32>)
// CHECK-NOT:     linalg.conv_2d_nchw_fchw
// CHECK:         return %[[Y]]
func.func @dynamic_batch(%x: tensor<?x16x18x18xf32>) -> tensor<?x32x16x16xf32> {
  %w = arith.constant dense<0.5> : tensor<32x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x16x18x18xf32>
  %e = tensor.empty(%n) : tensor<?x32x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32x16x16xf32>) -> tensor<?x32x16x16xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<?x16x18x18xf32>, tensor<32x16x3x3xf32>) outs(%f : tensor<?x32x16x16xf32>) -> tensor<?x32x16x16xf32>
  return %c : tensor<?x32x16x16xf32>
}

// -----

// A dynamic batch whose image takes 12 columns of T (3 tile rows of 4): each
// image gets 16, and the 4 past its last tile row are zeroed in a loop over
// the images (a static batch zeroes only the columns past the last image's).
// EXPLAIN: lowerline-winograd-conv.mlir:[[@LINE+13]]:8: remark: linalg.conv_2d_nchw_fchw: rewritten as Winograd F(4x4, 3x3): 36 x 16x16 by 16x16 x batch matmuls
// CHECK-LABEL: func.func @dynamic_batch_image_tails(
// CHECK:         %[[ZEROS:.+]] = arith.constant dense<0.000000e+00> : tensor<36x16x4xf32>
// CHECK:         %[[V:.+]] = scf.forall (%{{.+}}) in (%{{.+}}) shared_outs(%[[S:.+]] = %{{.+}}) -> (tensor<36x16x?xf32>)
// CHECK:           tensor.parallel_insert_slice %[[ZEROS]] into %[[S]][0, 0, %{{.+}}] [36, 16, 4] [1, 1, 1] : tensor<36x16x4xf32> into tensor<36x16x?xf32>
// CHECK:         linalg.batch_matmul ins(%{{.+}}, %[[V]] : tensor<36x16x16xf32>, tensor<36x16x?xf32>)
func.func @dynamic_batch_image_tails(%x: tensor<?x16x14x14xf32>) -> tensor<?x16x12x12xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x16x14x14xf32>
  %e = tensor.empty(%n) : tensor<?x16x12x12xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x16x12x12xf32>) -> tensor<?x16x12x12xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<?x16x14x14xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<?x16x12x12xf32>) -> tensor<?x16x12x12xf32>
  return %c : tensor<?x16x12x12xf32>
}

// -----

// Only the batch may be dynamic: a dynamic image side keeps the direct kernels.
// EXPLAIN: lowerline-winograd-conv.mlir:[[@LINE+5]]:8: remark: linalg.conv_2d_nchw_fchw: not rewritten as Winograd: dynamic shapes other than the batch
// CHECK-LABEL: func.func @dynamic_height(
// CHECK:         linalg.conv_2d_nchw_fchw
func.func @dynamic_height(%x: tensor<1x16x?x18xf32>, %init: tensor<1x16x?x16xf32>) -> tensor<1x16x?x16xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x?x18xf32>, tensor<16x16x3x3xf32>) outs(%init : tensor<1x16x?x16xf32>) -> tensor<1x16x?x16xf32>
  return %c : tensor<1x16x?x16xf32>
}

// -----

// A plane narrower than a cache line of tiles: a 14 x 14 output has 4 tile
// rows of 4 tiles, 16 bytes of each plane's line per tile row. With 8
// images the transforms take a whole image (the 4 tile rows that share the
// lines) per iteration, channel by channel, still 8 iterations for the 2
// cores; at batch 1 that would leave one iteration: one tile row each.
// CHECK-LABEL: func.func @groups_tile_rows_of_narrow_planes(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (8, 1) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<36x17x128xf32>)
// CHECK:           tensor.extract_slice %{{.+}}[0, 0, %{{.+}}] [36, 16, 16] [1, 1, 1] : tensor<36x17x128xf32> to tensor<36x16x16xf32>
// CHECK:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<36x16x16xf32>)
// CHECK:             scf.for %{{.+}} = %{{.+}} to %[[FOUR:.+]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<36x16x16xf32>)
// CHECK:         linalg.batch_matmul
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (8, 1) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<8x16x14x14xf32>)
// CHECK:           tensor.extract_slice %{{.+}} [1, 16, %{{.+}}, 14] [1, 1, 1, 1] : tensor<8x16x14x14xf32> to tensor<1x16x?x14xf32>
// CHECK:           scf.for
// CHECK:             scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<1x16x?x14xf32>)
// CHECK-LABEL: func.func @one_tile_row_per_iteration_at_batch_1(
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 4) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<36x17x16xf32>)
// CHECK:           tensor.extract_slice %{{.+}}[0, 0, %{{.+}}] [36, 16, 4] [1, 1, 1] : tensor<36x17x16xf32> to tensor<36x16x4xf32>
// CHECK:           scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<36x16x4xf32>)
// CHECK-NOT:         scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (tensor<36x16x4xf32>)
// CHECK:           tensor.parallel_insert_slice
// CHECK:         scf.forall (%{{.+}}, %{{.+}}) in (1, 4)
func.func @groups_tile_rows_of_narrow_planes(%x: tensor<8x16x16x16xf32>) -> tensor<8x16x14x14xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16x14x14xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16x14x14xf32>) -> tensor<8x16x14x14xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<8x16x16x16xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<8x16x14x14xf32>) -> tensor<8x16x14x14xf32>
  return %c : tensor<8x16x14x14xf32>
}

func.func @one_tile_row_per_iteration_at_batch_1(%x: tensor<1x16x16x16xf32>) -> tensor<1x16x14x14xf32> {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x14x14xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x16x16x16xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  return %c : tensor<1x16x14x14xf32>
}
