// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-int8-conv-matmul{target=sapphirerapids explain=1}))" \
// RUN:   --split-input-file 2>%t.explain | FileCheck %s
// RUN: FileCheck %s --check-prefix=EXPLAIN < %t.explain
// Without an int8 dot product (haswell: no VNNI) nothing is rewritten.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-int8-conv-matmul{target=haswell}))" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=PORTABLE
// The whole tiled stage: the matmul's B is the packed filter (no shuffles of B).
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-int8-conv-matmul{target=sapphirerapids}),lowerline-tile-and-fuse{target=sapphirerapids},func.func(lowerline-pack-weights),lowerline-vectorize{target=sapphirerapids},canonicalize)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=TILED

// A 1x2 stride-2 convolution, 3 -> 2 channels, batch 2, constant filter
// w[f, c, 0, kw] = 10 f + 3 kw + c + 1, and its requantize epilogue (a
// per-channel multiplier): the channels-last input gives one strided slice
// per tap, (kh, kw, c) the columns of A; the filter is the 6 x 2 matrix
// B[(kw, c), f]; the epilogue runs over (pixel, channel) rows, its result
// transposed back to NCHW.
// EXPLAIN: lowerline-int8-conv-matmul.mlir:[[@LINE+39]]:8: remark: linalg.conv_2d_nchw_fchw: rewritten as a 30x6 by 6x2 matmul of channels-last columns by the filter, 1 elementwise ops on its rows
// CHECK-LABEL: func.func @strided(
// CHECK-SAME:      %[[X:.+]]: tensor<2x3x5x10xi8>, %[[M:.+]]: tensor<2xf32>
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[X]] : tensor<2x3x5x10xi8>) outs(%{{.+}} : tensor<2x5x10x3xi8>) permutation = [0, 2, 3, 1]
// The taps of each output row (n, oh) are one iteration of a parallel loop.
// CHECK:         %[[COL:.+]] = scf.forall (%[[I:.+]]) in (6) shared_outs(%[[O:.+]] = %{{.+}}) -> (tensor<2x3x5x1x2x3xi8>)
// CHECK:           %[[N:.+]] = arith.divui %[[I]], %{{.+}} : index
// CHECK:           %[[OH:.+]] = arith.remui %[[I]], %{{.+}} : index
// CHECK:           %[[TOP:.+]] = arith.muli %[[OH]], %{{.+}} : index
// CHECK:           %[[S0:.+]] = tensor.extract_slice %[[T]][%[[N]], %[[TOP]], 0, 0] [1, 1, 5, 3] [1, 2, 2, 1]
// CHECK:           %[[S1:.+]] = tensor.extract_slice %[[T]][%[[N]], %[[TOP]], 1, 0] [1, 1, 5, 3] [1, 2, 2, 1]
// CHECK:           scf.forall.in_parallel
// CHECK-NEXT:        tensor.parallel_insert_slice %[[S0]] into %[[O]][%[[N]], %[[OH]], 0, 0, 0, 0] [1, 1, 5, 1, 1, 3] [1, 1, 1, 1, 1, 1] : tensor<1x1x5x3xi8> into tensor<2x3x5x1x2x3xi8>
// CHECK-NEXT:        tensor.parallel_insert_slice %[[S1]] into %[[O]][%[[N]], %[[OH]], 0, 0, 1, 0]
// CHECK:         %[[A:.+]] = tensor.collapse_shape %[[COL]] {{\[\[}}0, 1, 2], [3, 4, 5]] : tensor<2x3x5x1x2x3xi8> into tensor<30x6xi8>
// CHECK:         %[[B:.+]] = arith.constant dense_resource<[[BLOB:lowerline_weight[0-9]+\.im2col]]> : tensor<6x2xi8>
// CHECK:         %[[F:.+]] = linalg.fill ins(%{{.+}} : i32) outs(%{{.+}} : tensor<30x2xi32>)
// CHECK:         %[[P:.+]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<30x6xi8>, tensor<6x2xi8>) outs(%[[F]] : tensor<30x2xi32>)
// CHECK:         %[[R:.+]] = linalg.generic {{.+}} ins(%[[P]], %[[M]] : tensor<30x2xi32>, tensor<2xf32>) outs(%{{.+}} : tensor<30x2xi8>)
// CHECK:           math.roundeven
// CHECK:         %[[E:.+]] = tensor.expand_shape %[[R]] {{\[\[}}0, 1, 2], [3]] output_shape [2, 3, 5, 2]
// CHECK:         %[[O:.+]] = linalg.transpose ins(%[[E]] : tensor<2x3x5x2xi8>) outs(%{{.+}} : tensor<2x2x3x5xi8>) permutation = [0, 3, 1, 2]
// CHECK:         return %[[O]]
// B[(kw, c), f] row by row: kw = 0: (1, 11), (2, 12), (3, 13); kw = 1: (4, 14), (5, 15), (6, 16).
// CHECK:       [[BLOB]]: "0x40000000010B020C030D040E050F0610"
// PORTABLE-LABEL: func.func @strided(
// PORTABLE:         linalg.conv_2d_nchw_fchw
// PORTABLE-NOT:     linalg.matmul
// TILED-LABEL: func.func @strided(
// TILED:         vector.transfer_read %{{.+}} : tensor<2x8xi8>, vector<64xi8>
// TILED-NOT:     vector.shuffle %{{.+}} [0, 16, 32, 48
// TILED:         llvm.call @llvm.x86.avx512.vpdpbusd.512
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @strided(%x: tensor<2x3x5x10xi8>, %m: tensor<2xf32>) -> tensor<2x2x3x5xi8> {
  %w = arith.constant dense<[[[[1, 4]], [[2, 5]], [[3, 6]]], [[[11, 14]], [[12, 15]], [[13, 16]]]]> : tensor<2x3x1x2xi8>
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x2x3x5xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x2x3x5xi32>) -> tensor<2x2x3x5xi32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<2x3x5x10xi8>, tensor<2x3x1x2xi8>) outs(%f : tensor<2x2x3x5xi32>) -> tensor<2x2x3x5xi32>
  %e2 = tensor.empty() : tensor<2x2x3x5xi8>
  %r = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %m : tensor<2x2x3x5xi32>, tensor<2xf32>) outs(%e2 : tensor<2x2x3x5xi8>) {
  ^bb0(%a: i32, %s: f32, %o: i8):
    %0 = arith.sitofp %a : i32 to f32
    %1 = arith.mulf %0, %s : f32
    %2 = math.roundeven %1 : f32
    %3 = arith.fptosi %2 : f32 to i8
    linalg.yield %3 : i8
  } -> tensor<2x2x3x5xi8>
  return %r : tensor<2x2x3x5xi8>
}

// -----

// A dilated 3x3 convolution whose epilogue also reads a tensor of its
// shape (a residual): that operand is transposed to rows as well; the
// init that is not a fill (a bias already broadcast) too.
// EXPLAIN: lowerline-int8-conv-matmul.mlir:[[@LINE+15]]:8: remark: linalg.conv_2d_nchw_fchw: rewritten as a 5x36 by 36x5 matmul of channels-last columns by the filter, 1 elementwise ops on its rows
// CHECK-LABEL: func.func @residual(
// CHECK-SAME:      %[[X:.+]]: tensor<1x4x5x9xi8>, %[[BIAS:.+]]: tensor<1x5x1x5xi32>, %[[RES:.+]]: tensor<1x5x1x5xi32>
// One output row: the taps are slices of the whole tensor, no loop.
// CHECK-NOT:     scf.forall
// CHECK:         tensor.extract_slice %{{.+}}[0, 4, 4, 0] [1, 1, 5, 4] [1, 1, 1, 1]
// CHECK:         %[[TB:.+]] = linalg.transpose ins(%[[BIAS]] : tensor<1x5x1x5xi32>) outs(%{{.+}} : tensor<1x1x5x5xi32>) permutation = [0, 2, 3, 1]
// CHECK:         %[[INIT:.+]] = tensor.collapse_shape %[[TB]]
// CHECK:         %[[P:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<5x36xi8>, tensor<36x5xi8>) outs(%[[INIT]] : tensor<5x5xi32>)
// CHECK:         %[[TR:.+]] = linalg.transpose ins(%[[RES]] : tensor<1x5x1x5xi32>)
// CHECK:         %[[R:.+]] = tensor.collapse_shape %[[TR]]
// CHECK:         linalg.generic {{.+}} ins(%[[P]], %[[R]] : tensor<5x5xi32>, tensor<5x5xi32>) outs(%{{.+}} : tensor<5x5xi32>)
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @residual(%x: tensor<1x4x5x9xi8>, %bias: tensor<1x5x1x5xi32>, %res: tensor<1x5x1x5xi32>) -> tensor<1x5x1x5xi32> {
  %w = arith.constant dense<1> : tensor<5x4x3x3xi8>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x4x5x9xi8>, tensor<5x4x3x3xi8>) outs(%bias : tensor<1x5x1x5xi32>) -> tensor<1x5x1x5xi32>
  %e = tensor.empty() : tensor<1x5x1x5xi32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %res : tensor<1x5x1x5xi32>, tensor<1x5x1x5xi32>) outs(%e : tensor<1x5x1x5xi32>) {
  ^bb0(%a: i32, %b: i32, %o: i32):
    %0 = arith.addi %a, %b : i32
    linalg.yield %0 : i32
  } -> tensor<1x5x1x5xi32>
  return %r : tensor<1x5x1x5xi32>
}

// -----

// Not rewritten: a filter that is not a constant (the activations would
// be the only layout that changes, and B could not be packed).
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: not rewritten as a matmul: the filter is not a constant with known bytes
// CHECK-LABEL: func.func @argument_filter(
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     linalg.matmul
func.func @argument_filter(%x: tensor<1x8x6x20xi8>, %w: tensor<8x8x3x3xi8>) -> tensor<1x8x4x18xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x8x4x18xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x8x4x18xi32>) -> tensor<1x8x4x18xi32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x8x6x20xi8>, tensor<8x8x3x3xi8>) outs(%f : tensor<1x8x4x18xi32>) -> tensor<1x8x4x18xi32>
  return %c : tensor<1x8x4x18xi32>
}

// -----

// Not rewritten: a float convolution (Winograd's or the direct kernels').
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: not rewritten as a matmul: element types f32, f32, f32 (needs i8 x i8 -> i32)
// CHECK-LABEL: func.func @float_conv(
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:     linalg.matmul
func.func @float_conv(%x: tensor<1x8x6x20xf32>) -> tensor<1x8x4x18xf32> {
  %w = arith.constant dense<1.0> : tensor<8x8x3x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x4x18xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x8x4x18xf32>) -> tensor<1x8x4x18xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x8x6x20xf32>, tensor<8x8x3x3xf32>) outs(%f : tensor<1x8x4x18xf32>) -> tensor<1x8x4x18xf32>
  return %c : tensor<1x8x4x18xf32>
}

// -----

// Two convolutions, the second reading the first's output padded with a
// zero point: it reads the first's channels-last rows through the
// transpose back to NCHW and the pad (rebuilt channels-last, its padding
// permuted), so the only transposes are of the input and of the last output.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME:      %[[X:.+]]: tensor<1x4x6x7xi8>
// CHECK:         linalg.transpose ins(%[[X]] : tensor<1x4x6x7xi8>) outs(%{{.+}} : tensor<1x6x7x4xi8>) permutation = [0, 2, 3, 1]
// CHECK:         %[[Y:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<42x5xi8>)
// CHECK:         %[[E:.+]] = tensor.expand_shape %[[Y]] {{\[\[}}0, 1, 2], [3]] output_shape [1, 6, 7, 5]
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[P:.+]] = tensor.pad %[[E]] low[0, 1, 2, 0] high[0, 1, 2, 0]
// CHECK:           tensor.yield %{{.+}} : i8
// CHECK-NEXT:    } : tensor<1x6x7x5xi8> to tensor<1x8x11x5xi8>
// CHECK:         tensor.extract_slice %[[P]][%{{.+}}, %{{.+}}, 0, 0] [1, 1, 9, 5] [1, 1, 1, 1]
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<54x45xi8>, tensor<45x3xi8>)
// CHECK:         linalg.transpose
// CHECK-NOT:     linalg.transpose
// CHECK:         return
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @chain(%x: tensor<1x4x6x7xi8>) -> tensor<1x3x6x9xi32> {
  %w1 = arith.constant dense<1> : tensor<5x4x1x1xi8>
  %w2 = arith.constant dense<2> : tensor<3x5x3x3xi8>
  %zp = arith.constant 5 : i8
  %c0 = arith.constant 0 : i32
  %e1 = tensor.empty() : tensor<1x5x6x7xi32>
  %f1 = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<1x5x6x7xi32>) -> tensor<1x5x6x7xi32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w1 : tensor<1x4x6x7xi8>, tensor<5x4x1x1xi8>) outs(%f1 : tensor<1x5x6x7xi32>) -> tensor<1x5x6x7xi32>
  %q = tensor.empty() : tensor<1x5x6x7xi8>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c1 : tensor<1x5x6x7xi32>) outs(%q : tensor<1x5x6x7xi8>) {
  ^bb0(%a: i32, %o: i8):
    %0 = arith.trunci %a : i32 to i8
    linalg.yield %0 : i8
  } -> tensor<1x5x6x7xi8>
  %p = tensor.pad %y low[0, 0, 1, 2] high[0, 0, 1, 2] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zp : i8
  } : tensor<1x5x6x7xi8> to tensor<1x5x8x11xi8>
  %e2 = tensor.empty() : tensor<1x3x6x9xi32>
  %f2 = linalg.fill ins(%c0 : i32) outs(%e2 : tensor<1x3x6x9xi32>) -> tensor<1x3x6x9xi32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w2 : tensor<1x5x8x11xi8>, tensor<3x5x3x3xi8>) outs(%f2 : tensor<1x3x6x9xi32>) -> tensor<1x3x6x9xi32>
  return %c2 : tensor<1x3x6x9xi32>
}

// -----

// A grouped convolution, 2 groups of 3 input channels (not a multiple of
// 4) and 16 output channels (the dot product's lanes), stride 1, batch 2:
// one dense convolution per group on its slice of the input and of the
// filter, each then an im2col matmul; the results are inserted back at
// their group, where the epilogue (over the grouped shape) reads them.
// EXPLAIN: remark: linalg.conv_2d_ngchw_gfchw: split into 2 dense convolutions, one per group
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: rewritten as a 24x27 by 27x16 matmul of channels-last columns by the filter, 0 elementwise ops on its rows
// EXPLAIN: remark: linalg.conv_2d_nchw_fchw: rewritten as a 24x27 by 27x16 matmul of channels-last columns by the filter, 0 elementwise ops on its rows
// CHECK-LABEL: func.func @grouped(
// CHECK-SAME:      %[[X:.+]]: tensor<2x2x3x5x6xi8>
// CHECK-NOT:     linalg.conv_2d_ngchw_gfchw
// CHECK:         %[[X0:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 0, 0] [2, 1, 3, 5, 6] [1, 1, 1, 1, 1] : tensor<2x2x3x5x6xi8> to tensor<2x3x5x6xi8>
// CHECK:         linalg.transpose ins(%[[X0]] : tensor<2x3x5x6xi8>)
// CHECK:         %[[B0:.+]] = arith.constant dense_resource<[[BLOB0:.+]]> : tensor<27x16xi8>
// CHECK:         %[[P0:.+]] = linalg.matmul ins(%{{.+}}, %[[B0]] : tensor<24x27xi8>, tensor<27x16xi8>) outs(%{{.+}} : tensor<24x16xi32>)
// CHECK:         %[[R0:.+]] = linalg.transpose
// CHECK:         %[[I0:.+]] = tensor.insert_slice %[[R0]] into %{{.+}}[0, 0, 0, 0, 0] [2, 1, 16, 3, 4] [1, 1, 1, 1, 1] : tensor<2x16x3x4xi32> into tensor<2x2x16x3x4xi32>
// CHECK:         %[[X1:.+]] = tensor.extract_slice %[[X]][0, 1, 0, 0, 0] [2, 1, 3, 5, 6] [1, 1, 1, 1, 1] : tensor<2x2x3x5x6xi8> to tensor<2x3x5x6xi8>
// CHECK:         %[[B1:.+]] = arith.constant dense_resource<[[BLOB1:.+]]> : tensor<27x16xi8>
// CHECK:         %[[P1:.+]] = linalg.matmul ins(%{{.+}}, %[[B1]] : tensor<24x27xi8>, tensor<27x16xi8>) outs(%{{.+}} : tensor<24x16xi32>)
// CHECK:         %[[R1:.+]] = linalg.transpose
// CHECK:         %[[I1:.+]] = tensor.insert_slice %[[R1]] into %[[I0]][0, 1, 0, 0, 0] [2, 1, 16, 3, 4]
// CHECK:         linalg.generic {{.+}} ins(%[[I1]], %{{.+}} : tensor<2x2x16x3x4xi32>, tensor<2x16xf32>)
// Each group's B[(kh, kw, c), f] is its own filter's: w[g, f, c, kh, kw] = g + 1.
// CHECK:       [[BLOB0]]: "0x4000000001010101
// CHECK:       [[BLOB1]]: "0x4000000002020202
// PORTABLE-LABEL: func.func @grouped(
// PORTABLE:         linalg.conv_2d_ngchw_gfchw
// PORTABLE-NOT:     linalg.matmul
// TILED-LABEL: func.func @grouped(
// TILED-NOT:     linalg.conv_2d_ngchw_gfchw
// TILED:         llvm.call @llvm.x86.avx512.vpdpbusd.512
// TILED:         llvm.call @llvm.x86.avx512.vpdpbusd.512
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#gf = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2)>
func.func @grouped(%x: tensor<2x2x3x5x6xi8>, %m: tensor<2x16xf32>) -> tensor<2x2x16x3x4xi8> {
  %w = arith.constant dense<"0x010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202"> : tensor<2x16x3x3x3xi8>
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x2x16x3x4xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x2x16x3x4xi32>) -> tensor<2x2x16x3x4xi32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<2x2x3x5x6xi8>, tensor<2x16x3x3x3xi8>) outs(%f : tensor<2x2x16x3x4xi32>) -> tensor<2x2x16x3x4xi32>
  %e2 = tensor.empty() : tensor<2x2x16x3x4xi8>
  %r = linalg.generic {indexing_maps = [#id5, #gf, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%c, %m : tensor<2x2x16x3x4xi32>, tensor<2x16xf32>) outs(%e2 : tensor<2x2x16x3x4xi8>) {
  ^bb0(%a: i32, %s: f32, %o: i8):
    %0 = arith.sitofp %a : i32 to f32
    %1 = arith.mulf %0, %s : f32
    %2 = math.roundeven %1 : f32
    %3 = arith.fptosi %2 : f32 to i8
    linalg.yield %3 : i8
  } -> tensor<2x2x16x3x4xi8>
  return %r : tensor<2x2x16x3x4xi8>
}

// -----

// Not split: 2 output channels per group, fewer than the dot product's 16
// lanes (the matmul's lanes are the group's output channels: most would
// idle), and a 1x1 filter (its window nest is as fast as the split).
// EXPLAIN: remark: linalg.conv_2d_ngchw_gfchw: not split into its groups: 2 output channels per group (fewer than the dot product's 16 lanes)
// EXPLAIN: remark: linalg.conv_2d_ngchw_gfchw: not split into its groups: a 1x1 filter (its window nest is as fast)
// CHECK-LABEL: func.func @grouped_narrow(
// CHECK:         linalg.conv_2d_ngchw_gfchw
// CHECK:         linalg.conv_2d_ngchw_gfchw
// CHECK-NOT:     linalg.matmul
func.func @grouped_narrow(%x: tensor<1x2x4x6x6xi8>) -> (tensor<1x2x2x4x4xi32>, tensor<1x2x16x6x6xi32>) {
  %w = arith.constant dense<1> : tensor<2x2x4x3x3xi8>
  %w1 = arith.constant dense<1> : tensor<2x16x4x1x1xi8>
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x2x2x4x4xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x2x2x4x4xi32>) -> tensor<1x2x2x4x4xi32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x2x4x6x6xi8>, tensor<2x2x4x3x3xi8>) outs(%f : tensor<1x2x2x4x4xi32>) -> tensor<1x2x2x4x4xi32>
  %e1 = tensor.empty() : tensor<1x2x16x6x6xi32>
  %f1 = linalg.fill ins(%c0 : i32) outs(%e1 : tensor<1x2x16x6x6xi32>) -> tensor<1x2x16x6x6xi32>
  %c1 = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w1 : tensor<1x2x4x6x6xi8>, tensor<2x16x4x1x1xi8>) outs(%f1 : tensor<1x2x16x6x6xi32>) -> tensor<1x2x16x6x6xi32>
  return %c, %c1 : tensor<1x2x2x4x4xi32>, tensor<1x2x16x6x6xi32>
}

// -----

// Not split: one input channel per group (depthwise but for its name: no
// channel reduction for the dot product); it stays a window nest.
// EXPLAIN: remark: linalg.conv_2d_ngchw_gfchw: not split into its groups: one input channel per group (no channel reduction for the dot product)
// CHECK-LABEL: func.func @grouped_one_channel(
// CHECK:         linalg.conv_2d_ngchw_gfchw
// CHECK-NOT:     linalg.matmul
func.func @grouped_one_channel(%x: tensor<1x4x1x6x6xi8>) -> tensor<1x4x16x4x4xi32> {
  %w = arith.constant dense<1> : tensor<4x16x1x3x3xi8>
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x4x16x4x4xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x16x4x4xi32>) -> tensor<1x4x16x4x4xi32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x4x1x6x6xi8>, tensor<4x16x1x3x3xi8>) outs(%f : tensor<1x4x16x4x4xi32>) -> tensor<1x4x16x4x4xi32>
  return %c : tensor<1x4x16x4x4xi32>
}

// -----

// Not split: a grouped filter that is not a constant.
// EXPLAIN: remark: linalg.conv_2d_ngchw_gfchw: not split into its groups: the filter is not a constant with known bytes
// CHECK-LABEL: func.func @grouped_argument_filter(
// CHECK:         linalg.conv_2d_ngchw_gfchw
// CHECK-NOT:     linalg.matmul
func.func @grouped_argument_filter(%x: tensor<1x2x4x6x6xi8>, %w: tensor<2x16x4x3x3xi8>) -> tensor<1x2x16x4x4xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x2x16x4x4xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x2x16x4x4xi32>) -> tensor<1x2x16x4x4xi32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x2x4x6x6xi8>, tensor<2x16x4x3x3xi8>) outs(%f : tensor<1x2x16x4x4xi32>) -> tensor<1x2x16x4x4xi32>
  return %c : tensor<1x2x16x4x4xi32>
}
