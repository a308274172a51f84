// Transposes in lowerline-tile-and-fuse: one that moves the innermost dim
// (NCHW <-> NHWC, lowerline-int8-conv-matmul's) is tiled in square blocks
// that divide both dims it swaps, so that rows of the input are read whole
// and transposed in registers: lowerline-vectorize lowers each block's
// vector.transpose to one vector.shuffle of the flattened block (upstream's
// "shuffle_1d"; LLVM makes vpermb/vpermt2ps of it), not to one extract and
// insert per element.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids explain})" \
// RUN:   --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=EXPLAIN
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-tile-and-fuse{target=sapphirerapids},lowerline-vectorize{target=sapphirerapids})" \
// RUN:   --split-input-file | FileCheck %s

// 48 columns and 32 channels: blocks of 16 x 16, each read as 16 rows of
// 16 contiguous bytes and written as 16 rows of the output.
// EXPLAIN: remark: linalg.transpose: g0: vector tile [1, 1, 16, 16]
// CHECK-LABEL: func.func @to_channels_last(
// CHECK:         vector.transfer_read %{{.+}} : tensor<1x32x8x48xi8>, vector<16x1x16xi8>
// CHECK-NOT:     vector.extract %{{.+}} : i8 from
// CHECK:         vector.shuffle %{{.+}} : vector<256xi8>, vector<256xi8>
// CHECK-NOT:     vector.extract %{{.+}} : i8 from
// CHECK:         vector.transfer_write %{{.+}} : vector<16x16xi8>, tensor<1x8x48x32xi8>
func.func @to_channels_last(%x: tensor<1x32x8x48xi8>) -> tensor<1x8x48x32xi8> {
  %e = tensor.empty() : tensor<1x8x48x32xi8>
  %t = linalg.transpose ins(%x : tensor<1x32x8x48xi8>) outs(%e : tensor<1x8x48x32xi8>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x8x48x32xi8>
}

// -----

// Back to NCHW, 56 columns: blocks of 8 (16 does not divide 56).
// EXPLAIN: remark: linalg.transpose: g0: vector tile [1, 8, 1, 8]
// CHECK-LABEL: func.func @to_channels_first(
// CHECK:         vector.transfer_read %{{.+}} : tensor<1x3x56x16xf32>, vector<8x8xf32>
// CHECK-NOT:     vector.extract %{{.+}} : f32 from
// CHECK:         vector.shuffle %{{.+}} : vector<64xf32>, vector<64xf32>
func.func @to_channels_first(%x: tensor<1x3x56x16xf32>) -> tensor<1x16x3x56xf32> {
  %e = tensor.empty() : tensor<1x16x3x56xf32>
  %t = linalg.transpose ins(%x : tensor<1x3x56x16xf32>) outs(%e : tensor<1x16x3x56xf32>) permutation = [0, 3, 1, 2]
  return %t : tensor<1x16x3x56xf32>
}

// -----

// No block divides 7 columns: vectors along the output's innermost dim,
// each gathered from the input, as for any transpose.
// EXPLAIN: remark: linalg.transpose: g0: vector tile [1, 1, 1, 58]
// CHECK-LABEL: func.func @odd(
// CHECK:         vector.transfer_read %{{.+}} : tensor<1x58x5x7xf32>, vector<58x1x1xf32>
func.func @odd(%x: tensor<1x58x5x7xf32>) -> tensor<1x5x7x58xf32> {
  %e = tensor.empty() : tensor<1x5x7x58xf32>
  %t = linalg.transpose ins(%x : tensor<1x58x5x7xf32>) outs(%e : tensor<1x5x7x58xf32>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x5x7x58xf32>
}

// -----

// A transpose that keeps the innermost dim moves whole rows: not blocked,
// nothing to shuffle.
// EXPLAIN: remark: linalg.transpose: g0: vector tile [1, 1, 1, 32]
// CHECK-LABEL: func.func @rows(
// CHECK-NOT:     vector.shuffle
// CHECK:         return
func.func @rows(%x: tensor<2x16x8x32xf32>) -> tensor<2x8x16x32xf32> {
  %e = tensor.empty() : tensor<2x8x16x32xf32>
  %t = linalg.transpose ins(%x : tensor<2x16x8x32xf32>) outs(%e : tensor<2x8x16x32xf32>) permutation = [0, 2, 1, 3]
  return %t : tensor<2x8x16x32xf32>
}

// -----

// Attention's keys transposed over a dynamic sequence (lowerline.compile(...,
// dynamic=...)): the dynamic output dim is tiled in blocks too, the full
// ones static (rows of the input read whole), the partial last one peeled
// and masked, instead of every output vector gathered element by element.
// EXPLAIN: remark: linalg.transpose: g0: vector tile [1, 1, 16, 16]
// CHECK-LABEL: func.func @keys_dynamic_sequence(
// CHECK:         scf.for {{.+}} step %c16
// CHECK:           vector.transfer_read %{{.+}} {in_bounds = [true, true]} : tensor<2x4x?x16xf32>, vector<16x16xf32>
// CHECK:           vector.transfer_write %{{.+}} {in_bounds = [true, true]} : vector<16x16xf32>, tensor<2x4x16x?xf32>
// CHECK:         scf.for {{.+}} step %c16
// CHECK:           vector.create_mask
// CHECK:           vector.transfer_read %{{.+}}, %{{.+}}, %{{.+}} {in_bounds = [true, true]} : tensor<1x1x?x16xf32>, vector<16x16xf32>
func.func @keys_dynamic_sequence(%x: tensor<2x4x?x16xf32>, %s: index) -> tensor<2x4x16x?xf32> {
  %e = tensor.empty(%s) : tensor<2x4x16x?xf32>
  %t = linalg.transpose ins(%x : tensor<2x4x?x16xf32>) outs(%e : tensor<2x4x16x?xf32>) permutation = [0, 1, 3, 2]
  return %t : tensor<2x4x16x?xf32>
}

// -----

// A dynamic output dim whose partner (7) no block divides: vectors along
// the dynamic dim, gathered, as before.
// EXPLAIN: remark: linalg.transpose: g0: vector tile [1, 1, 1, 64]
// CHECK-LABEL: func.func @dynamic_odd_partner(
// CHECK-NOT:     vector<16x16xf32>
// CHECK:         vector.transfer_read %{{.+}} : tensor<2x4x?x7xf32>, vector<64x1xf32>
func.func @dynamic_odd_partner(%x: tensor<2x4x?x7xf32>, %s: index) -> tensor<2x4x7x?xf32> {
  %e = tensor.empty(%s) : tensor<2x4x7x?xf32>
  %t = linalg.transpose ins(%x : tensor<2x4x?x7xf32>) outs(%e : tensor<2x4x7x?xf32>) permutation = [0, 1, 3, 2]
  return %t : tensor<2x4x7x?xf32>
}
