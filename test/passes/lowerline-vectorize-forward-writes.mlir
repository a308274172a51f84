// lowerline-vectorize forwards a vector written over a whole tile to the
// reads of that tile (through slices at offset 0 that drop unit dims, and
// inserts that overwrite a whole tile): a register tile's accumulators then
// start from its fused bias vector, and its epilogue takes the accumulators
// themselves, not a masked store and a masked load of them. Lanes the read
// does not take from the tile (masked off, past its end) get its padding.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-vectorize)" \
// RUN:   --split-input-file | FileCheck %s

// A bias vector written with a mask into a 14-column tile, read back (the
// unit dim dropped) with the same mask: the read is the vector, its two
// lanes past the tile's end the padding.
// CHECK-LABEL: func.func @masked_tile_read_back(
// CHECK-SAME:      %[[BIAS:[^:]+]]: vector<2x1x16xf32>
// CHECK:         %[[CAST:.+]] = vector.shape_cast %[[BIAS]] : vector<2x1x16xf32> to vector<2x16xf32>
// CHECK:         %[[PAD:.+]] = vector.broadcast %{{.+}} : f32 to vector<2x16xf32>
// CHECK:         %[[READ:.+]] = arith.select %{{.+}}, %[[CAST]], %[[PAD]] : vector<2x16xi1>, vector<2x16xf32>
// CHECK-NOT:     vector.transfer_read
// CHECK:         return %[[READ]]
func.func @masked_tile_read_back(%bias: vector<2x1x16xf32>, %t: tensor<1x2x1x14xf32>) -> vector<2x16xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %m = vector.constant_mask [2, 1, 14] : vector<2x1x16xi1>
  %w = vector.transfer_write %bias, %t[%c0, %c0, %c0, %c0], %m {in_bounds = [true, true, true]} : vector<2x1x16xf32>, tensor<1x2x1x14xf32>
  %s = tensor.extract_slice %w[0, 0, 0, 0] [1, 2, 1, 14] [1, 1, 1, 1] : tensor<1x2x1x14xf32> to tensor<2x14xf32>
  %rm = vector.constant_mask [2, 14] : vector<2x16xi1>
  %r = vector.transfer_read %s[%c0, %c0], %pad, %rm {in_bounds = [true, true]} : tensor<2x14xf32>, vector<2x16xf32>
  return %r : vector<2x16xf32>
}

// -----

// Accumulators stored with a mask into a 14-column tile that is then
// inserted whole into the output tile, read back with a mask by the
// epilogue: the accumulators, reshaped (the read's padding is poison, so
// its masked-off lanes may be anything).
// CHECK-LABEL: func.func @masked_read_through_a_whole_insert(
// CHECK-SAME:      %[[ACC:[^:]+]]: vector<4x16xf32>
// CHECK:         %[[CAST:.+]] = vector.shape_cast %[[ACC]] : vector<4x16xf32> to vector<4x1x16xf32>
// CHECK-NOT:     vector.transfer_read
// CHECK:         return %[[CAST]]
func.func @masked_read_through_a_whole_insert(%acc: vector<4x16xf32>, %t: tensor<4x14xf32>, %out: tensor<1x4x1x14xf32>) -> vector<4x1x16xf32> {
  %c0 = arith.constant 0 : index
  %pad = ub.poison : f32
  %m = vector.constant_mask [4, 14] : vector<4x16xi1>
  %w = vector.transfer_write %acc, %t[%c0, %c0], %m {in_bounds = [true, true]} : vector<4x16xf32>, tensor<4x14xf32>
  %i = tensor.insert_slice %w into %out[0, 0, 0, 0] [1, 4, 1, 14] [1, 1, 1, 1] : tensor<4x14xf32> into tensor<1x4x1x14xf32>
  %rm = vector.constant_mask [4, 1, 14] : vector<4x1x16xi1>
  %r = vector.transfer_read %i[%c0, %c0, %c0, %c0], %pad, %rm {in_bounds = [true, true, true]} : tensor<1x4x1x14xf32>, vector<4x1x16xf32>
  return %r : vector<4x1x16xf32>
}

// -----

// Not forwarded: the read starts 8 columns into the written tile.
// CHECK-LABEL: func.func @offset_read_stays(
// CHECK:         vector.transfer_write
// CHECK:         vector.transfer_read
func.func @offset_read_stays(%v: vector<2x16xf32>, %t: tensor<2x16xf32>) -> vector<2x8xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %w = vector.transfer_write %v, %t[%c0, %c0] {in_bounds = [true, true]} : vector<2x16xf32>, tensor<2x16xf32>
  %s = tensor.extract_slice %w[0, 8] [2, 8] [1, 1] : tensor<2x16xf32> to tensor<2x8xf32>
  %r = vector.transfer_read %s[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<2x8xf32>, vector<2x8xf32>
  return %r : vector<2x8xf32>
}

// -----

// Not forwarded: the write covers only half of the tile, whose other half
// the read takes from the tensor that was there.
// CHECK-LABEL: func.func @partial_write_stays(
// CHECK:         vector.transfer_write
// CHECK:         vector.transfer_read
func.func @partial_write_stays(%v: vector<2x8xf32>, %t: tensor<2x16xf32>) -> vector<2x16xf32> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %w = vector.transfer_write %v, %t[%c0, %c0] {in_bounds = [true, true]} : vector<2x8xf32>, tensor<2x16xf32>
  %r = vector.transfer_read %w[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<2x16xf32>, vector<2x16xf32>
  return %r : vector<2x16xf32>
}
