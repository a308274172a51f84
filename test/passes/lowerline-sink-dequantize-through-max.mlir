// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-sink-dequantize-through-max))" \
// RUN:   --split-input-file | FileCheck %s

// A softmax's row max of dequantized u8 scores (scaled by a positive
// constant) runs on the stored bytes from a fill of 0; the exp that reads
// the max broadcast recomputes the dequantized max itself (no kernel left
// for it), and the dequantize stays for the exp alone.
// CHECK-LABEL: func.func @row_max_of_u8(
// CHECK-SAME:      %[[Q:[a-z0-9]+]]: tensor<4x16xi8>)
// CHECK-DAG:     %[[ZERO:.+]] = arith.constant 0 : i8
// CHECK:         %[[INIT:.+]] = linalg.fill ins(%[[ZERO]] : i8)
// CHECK:         %[[M:.+]] = linalg.generic
// CHECK-SAME:        ins(%[[Q]] : tensor<4x16xi8>) outs(%[[INIT]] : tensor<4xi8>)
// CHECK:           arith.maxui
// CHECK-NOT:       arith.maximumf
// CHECK:         linalg.generic
// CHECK-SAME:        ins(%{{.+}}, %[[M]] : tensor<4x16xf32>, tensor<4xi8>)
// CHECK:           arith.extui
// CHECK:           arith.mulf
// CHECK:           arith.subf
// CHECK:           math.exp
// CHECK-NOT:     arith.maximumf
// CHECK:         return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#row1 = affine_map<(d0, d1) -> (d0, 0)>
func.func @row_max_of_u8(%q: tensor<4x16xi8>) -> tensor<4x16xf32> {
  %z = arith.constant 125 : i64
  %s = arith.constant 0.1646 : f32
  %t = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<4x16xi8>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %w = arith.extui %x : i8 to i64
    %c = arith.subi %w, %z : i64
    %f = arith.sitofp %c : i64 to f32
    %m = arith.mulf %f, %s : f32
    %n = arith.mulf %m, %t : f32
    linalg.yield %n : f32
  } -> tensor<4x16xf32>
  %re = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%d : tensor<4x16xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %mx = tensor.expand_shape %max [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
  %exp = linalg.generic {indexing_maps = [#id, #row1, #id], iterator_types = ["parallel", "parallel"]}
      ins(%d, %mx : tensor<4x16xf32>, tensor<4x1xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.subf %x, %y : f32
    %r2 = math.exp %r : f32
    linalg.yield %r2 : f32
  } -> tensor<4x16xf32>
  return %exp : tensor<4x16xf32>
}

// -----

// An s8 input (extsi) is compared signed, from a fill of -128; a reader
// that is not elementwise gets the dequantized maxima as a small generic.
// CHECK-LABEL: func.func @max_of_s8_returned(
// CHECK-DAG:     %[[LEAST:.+]] = arith.constant -128 : i8
// CHECK:         linalg.fill ins(%[[LEAST]] : i8)
// CHECK:         arith.maxsi
// CHECK:         %[[D:.+]] = linalg.generic
// CHECK-SAME:        ins(%{{.+}} : tensor<4xi8>)
// CHECK:           arith.extsi
// CHECK:         return %[[D]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @max_of_s8_returned(%q: tensor<4x16xi8>) -> tensor<4xf32> {
  %s = arith.constant 0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<4x16xi8>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %w = arith.extsi %x : i8 to i32
    %f = arith.sitofp %w : i32 to f32
    %m = arith.mulf %f, %s : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  %re = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%d : tensor<4x16xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %max : tensor<4xf32>
}

// -----

// A negative scale reverses the order: the max stays on the floats.
// CHECK-LABEL: func.func @negative_scale_not_rewritten(
// CHECK-NOT:     arith.maxui
// CHECK-NOT:     arith.maxsi
// CHECK:         arith.maximumf
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @negative_scale_not_rewritten(%q: tensor<4x16xi8>) -> tensor<4xf32> {
  %s = arith.constant -0.5 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<4x16xi8>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.uitofp %x : i8 to f32
    %m = arith.mulf %f, %s : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  %re = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%d : tensor<4x16xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %max : tensor<4xf32>
}

// -----

// uitofp after a subtraction could see a negative value (converted huge):
// not monotone, not rewritten. Nor is a max from a finite init.
// CHECK-LABEL: func.func @uitofp_after_subi_not_rewritten(
// CHECK-NOT:     arith.maxui
// CHECK:         arith.maximumf
// CHECK-LABEL: func.func @finite_init_not_rewritten(
// CHECK-NOT:     arith.maxui
// CHECK:         arith.maximumf
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @uitofp_after_subi_not_rewritten(%q: tensor<4x16xi8>) -> tensor<4xf32> {
  %z = arith.constant 3 : i32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<4x16xi8>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %w = arith.extui %x : i8 to i32
    %c = arith.subi %w, %z : i32
    %f = arith.uitofp %c : i32 to f32
    linalg.yield %f : f32
  } -> tensor<4x16xf32>
  %re = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%d : tensor<4x16xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %max : tensor<4xf32>
}
func.func @finite_init_not_rewritten(%q: tensor<4x16xi8>) -> tensor<4xf32> {
  %s = arith.constant 0.5 : f32
  %lo = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<4x16xi8>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %f = arith.uitofp %x : i8 to f32
    %m = arith.mulf %f, %s : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  %re = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%lo : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%d : tensor<4x16xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %max : tensor<4xf32>
}
