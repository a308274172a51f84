// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-fold-constant-transposes))" \
// RUN:   --split-input-file | FileCheck %s

// A transpose of an inline dense<...> constant becomes a new constant holding
// the transposed values (a dense_resource blob: 4 bytes of alignment, then
// the elements little endian: 1, 4, 2, 5, 3, 6).
// CHECK-LABEL: func.func @folds_dense_2x3(
// CHECK:         %[[T:.+]] = arith.constant dense_resource<[[NAME:lowerline_weight[0-9]+\.t10]]> : tensor<3x2xf32>
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[T]] : tensor<3x2xf32>
// CHECK:       dialect_resources
// CHECK:         [[NAME]]: "0x400000000000803F00008040000000400000A040000040400000C040"
func.func @folds_dense_2x3(%init: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = linalg.transpose ins(%c : tensor<2x3xf32>) outs(%init : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}

// -----

// A splat constant is folded too (to six copies of 2.0).
// CHECK-LABEL: func.func @folds_splat(
// CHECK:         %[[T:.+]] = arith.constant dense_resource<[[NAME:lowerline_weight[0-9]+\.t10]]> : tensor<3x2xf32>
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[T]] : tensor<3x2xf32>
// CHECK:       dialect_resources
// CHECK:         [[NAME]]: "0x40000000{{(00000040){6}()}}"
func.func @folds_splat(%init: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %c = arith.constant dense<2.0> : tensor<2x3xf32>
  %t = linalg.transpose ins(%c : tensor<2x3xf32>) outs(%init : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}

// -----

// Any permutation: result[i, j, k] = c[j, k, i], i.e. 1, 3, 2, 4; the new
// name records the permutation.
// CHECK-LABEL: func.func @folds_rank3_permutation(
// CHECK:         %[[T:.+]] = arith.constant dense_resource<[[NAME:lowerline_weight[0-9]+\.t201]]> : tensor<2x2x1xf32>
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[T]] : tensor<2x2x1xf32>
// CHECK:       dialect_resources
// CHECK:         [[NAME]]: "0x400000000000803F000040400000004000008040"
func.func @folds_rank3_permutation(%init: tensor<2x2x1xf32>) -> tensor<2x2x1xf32> {
  %c = arith.constant dense<[[[1.0, 2.0]], [[3.0, 4.0]]]> : tensor<2x1x2xf32>
  %t = linalg.transpose ins(%c : tensor<2x1x2xf32>) outs(%init : tensor<2x2x1xf32>) permutation = [2, 0, 1]
  return %t : tensor<2x2x1xf32>
}

// -----

// A dense_resource weight whose blob is in the file (alignment 4, then
// 1..6 as f32) is read from the blob; the new blob is named after it.
// CHECK-LABEL: func.func @folds_dense_resource(
// CHECK:         %[[T:.+]] = arith.constant dense_resource<w_2x3.t10> : tensor<3x2xf32>
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[T]] : tensor<3x2xf32>
// CHECK:       dialect_resources
// CHECK-DAG:     w_2x3: "0x040000000000803F0000004000004040000080400000A0400000C040"
// CHECK-DAG:     w_2x3.t10: "0x400000000000803F00008040000000400000A040000040400000C040"
func.func @folds_dense_resource(%init: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %c = arith.constant dense_resource<w_2x3> : tensor<2x3xf32>
  %t = linalg.transpose ins(%c : tensor<2x3xf32>) outs(%init : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w_2x3: "0x040000000000803F0000004000004040000080400000A0400000C040"
    }
  }
#-}

// -----

// A transpose of a function argument is left alone.
// CHECK-LABEL: func.func @keeps_transpose_of_argument(
// CHECK-SAME:      %[[A:[a-z0-9]+]]: tensor<2x3xf32>, %[[I:[a-z0-9]+]]: tensor<3x2xf32>)
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[A]] : tensor<2x3xf32>) outs(%[[I]] : tensor<3x2xf32>) permutation = [1, 0]
// CHECK:         return %[[T]] : tensor<3x2xf32>
func.func @keeps_transpose_of_argument(%a: tensor<2x3xf32>, %init: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%init : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}

// -----

// A dense_resource whose blob is not in the file (elided): its bytes are
// unknown, the transpose stays.
// CHECK-LABEL: func.func @keeps_transpose_of_elided_blob(
// CHECK:         %[[C:.+]] = arith.constant dense_resource<elided_weight> : tensor<2x3xf32>
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[C]] : tensor<2x3xf32>)
// CHECK:         return %[[T]] : tensor<3x2xf32>
// CHECK-NOT:     elided_weight.t10
func.func @keeps_transpose_of_elided_blob(%init: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %c = arith.constant dense_resource<elided_weight> : tensor<2x3xf32>
  %t = linalg.transpose ins(%c : tensor<2x3xf32>) outs(%init : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}

// -----

// A constant of an element type the pass cannot evaluate (bf16) stays.
// CHECK-LABEL: func.func @keeps_transpose_of_bf16_constant(
// CHECK:         %[[C:.+]] = arith.constant dense<{{.+}}> : tensor<2x3xbf16>
// CHECK:         %[[T:.+]] = linalg.transpose ins(%[[C]] : tensor<2x3xbf16>)
// CHECK:         return %[[T]] : tensor<3x2xbf16>
func.func @keeps_transpose_of_bf16_constant(%init: tensor<3x2xbf16>) -> tensor<3x2xbf16> {
  %c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xbf16>
  %t = linalg.transpose ins(%c : tensor<2x3xbf16>) outs(%init : tensor<3x2xbf16>) permutation = [1, 0]
  return %t : tensor<3x2xbf16>
}

// -----

// A folded blob whose name is taken gets another (w0.t10_1); the file's own
// w0.t10 keeps its bytes (zeros), so folding it again gives zeros.
// CHECK-LABEL: func.func @a(
// CHECK:         arith.constant dense_resource<w0.t10_1> : tensor<3x2xf32>
// CHECK-LABEL: func.func @b(
// CHECK:         arith.constant dense_resource<w0.t10.t10> : tensor<2x3xf32>
// CHECK:         w0.t10_1: "0x400000000000803F00008040000000400000A040000040400000C040"
// CHECK:         w0.t10.t10: "0x40000000000000000000000000000000000000000000000000000000"
func.func @a(%e: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %c = arith.constant dense_resource<w0> : tensor<2x3xf32>
  %t = linalg.transpose ins(%c : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
  return %t : tensor<3x2xf32>
}
func.func @b(%e: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = arith.constant dense_resource<w0.t10> : tensor<3x2xf32>
  %t = linalg.transpose ins(%c : tensor<3x2xf32>) outs(%e : tensor<2x3xf32>) permutation = [1, 0]
  return %t : tensor<2x3xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w0: "0x040000000000803F0000004000004040000080400000A0400000C040",
      w0.t10: "0x04000000000000000000000000000000000000000000000000000000"
    }
  }
#-}
