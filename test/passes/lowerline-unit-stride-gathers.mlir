// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-unit-stride-gathers))" \
// RUN:   --split-input-file | FileCheck %s
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-unit-stride-gathers),expand-strided-metadata,convert-vector-to-llvm,finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts)" \
// RUN:   --split-input-file | FileCheck %s --check-prefix=LLVM

// A gather from every other column (x[:, ::2], the real part of a complex
// tensor). Its index vector counts elements of the 5x7 view row-major from
// [%i, 0]: each lane's position is split into row and column (by the size
// 7) and weighted by the strides 14 and 2, into a flat unit-stride view of
// the same buffer.
// CHECK-LABEL: func.func @strided_columns(
// CHECK-SAME:    %[[V:.+]]: memref<5x7xf32, strided<[14, 2]>>, %[[I:.+]]: index, %[[IDX:.+]]: vector<7xindex>
// CHECK:         %[[BASE:.+]], %[[OFF:.+]], %[[SIZES:.+]]:2, %[[STRIDES:.+]]:2 = memref.extract_strided_metadata %[[V]]
// CHECK:         %[[FLAT:.+]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%{{.+}}], strides: [1]
// CHECK-SAME:      to memref<?xf32, strided<[1], offset: ?>>
// CHECK:         %[[ROWS:.+]] = arith.muli %{{.+}}, %[[SIZES]]#0
// CHECK:         %[[START:.+]] = arith.addi %[[ROWS]], %[[I]]
// CHECK:         %[[AT:.+]] = arith.muli %[[START]], %[[SIZES]]#1
// CHECK:         %[[AT0:.+]] = arith.addi %[[AT]], %{{.+}}
// CHECK:         %[[POS0:.+]] = vector.broadcast %[[AT0]] : index to vector<7xindex>
// CHECK:         %[[POS:.+]] = arith.addi %[[POS0]], %[[IDX]]
// CHECK:         %[[WIDTH:.+]] = vector.broadcast %[[SIZES]]#1
// CHECK:         %[[COL:.+]] = arith.remui %[[POS]], %[[WIDTH]]
// CHECK:         %[[ROW:.+]] = arith.divui %[[POS]], %[[WIDTH]]
// CHECK:         %[[CS:.+]] = vector.broadcast %[[STRIDES]]#1
// CHECK:         %[[COLOFF:.+]] = arith.muli %[[COL]], %[[CS]]
// CHECK:         %[[RS:.+]] = vector.broadcast %[[STRIDES]]#0
// CHECK:         %[[ROWOFF:.+]] = arith.muli %[[ROW]], %[[RS]]
// CHECK:         %[[OFFSETS:.+]] = arith.addi %[[COLOFF]], %[[ROWOFF]]
// CHECK:         vector.gather %[[FLAT]][%{{.+}}] [%[[OFFSETS]]]
// CHECK-SAME:      memref<?xf32, strided<[1], offset: ?>>, vector<7xindex>
// CHECK-NOT:     vector.gather
// LLVM-LABEL: llvm.func @strided_columns(
// LLVM:         llvm.intr.masked.gather
// LLVM-NOT:     vector.gather
func.func @strided_columns(%v: memref<5x7xf32, strided<[14, 2]>>, %i: index, %idx: vector<7xindex>) -> vector<7xf32> {
  %c0 = arith.constant 0 : index
  %mask = arith.constant dense<true> : vector<7xi1>
  %pass = arith.constant dense<0.0> : vector<7xf32>
  %g = vector.gather %v[%i, %c0] [%idx], %mask, %pass
      : memref<5x7xf32, strided<[14, 2]>>, vector<7xindex>, vector<7xi1>, vector<7xf32> into vector<7xf32>
  return %g : vector<7xf32>
}

// -----

// Unit innermost stride but gaps between the rows (x[:, 2:9] of a 5x16
// buffer): convert-vector-to-llvm would lower this gather, with the
// row-major positions taken as memory offsets (the wrong rows). Rewritten.
// CHECK-LABEL: func.func @row_gaps(
// CHECK:         memref.extract_strided_metadata
// CHECK:         arith.divui
// CHECK:         vector.gather %{{.+}}[%{{.+}}] [%{{.+}}], %{{.+}}, %{{.+}} : memref<?xf32, strided<[1], offset: ?>>
func.func @row_gaps(%v: memref<5x7xf32, strided<[16, 1], offset: 2>>, %idx: vector<7xindex>) -> vector<7xf32> {
  %c0 = arith.constant 0 : index
  %mask = arith.constant dense<true> : vector<7xi1>
  %pass = arith.constant dense<0.0> : vector<7xf32>
  %g = vector.gather %v[%c0, %c0] [%idx], %mask, %pass
      : memref<5x7xf32, strided<[16, 1], offset: 2>>, vector<7xindex>, vector<7xi1>, vector<7xf32> into vector<7xf32>
  return %g : vector<7xf32>
}

// -----

// A dynamic innermost stride and an offset, with a 2-D index vector.
// CHECK-LABEL: func.func @dynamic_stride(
// CHECK:         memref.extract_strided_metadata
// CHECK:         memref.reinterpret_cast
// CHECK:         vector.gather %{{.+}}[%{{.+}}] [%{{.+}}], %{{.+}}, %{{.+}} : memref<?xf32, strided<[1], offset: ?>>, vector<1x4xindex>
// LLVM-LABEL: llvm.func @dynamic_stride(
// LLVM:         llvm.intr.masked.gather
func.func @dynamic_stride(%v: memref<3x?xf32, strided<[?, ?], offset: ?>>, %idx: vector<1x4xindex>) -> vector<1x4xf32> {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %mask = arith.constant dense<true> : vector<1x4xi1>
  %pass = arith.constant dense<0.0> : vector<1x4xf32>
  %g = vector.gather %v[%c1, %c0] [%idx], %mask, %pass
      : memref<3x?xf32, strided<[?, ?], offset: ?>>, vector<1x4xindex>, vector<1x4xi1>, vector<1x4xf32> into vector<1x4xf32>
  return %g : vector<1x4xf32>
}

// -----

// Not fired: contiguous sources, with an offset (rows 2.. of a buffer), with
// a unit dim of any stride, with a dynamic outermost size, and a gather
// from a tensor.
// CHECK-LABEL: func.func @contiguous(
// CHECK-NOT:     memref.extract_strided_metadata
// CHECK:         vector.gather %{{.+}}[%{{.+}}, %{{.+}}] [%{{.+}}], %{{.+}}, %{{.+}} : memref<5x7xf32, strided<[7, 1], offset: 14>>
// CHECK:         vector.gather %{{.+}}[%{{.+}}, %{{.+}}] [%{{.+}}], %{{.+}}, %{{.+}} : memref<1x7xf32, strided<[64, 1], offset: 3>>
// CHECK:         vector.gather %{{.+}}[%{{.+}}, %{{.+}}] [%{{.+}}], %{{.+}}, %{{.+}} : memref<?x7xf32>
// CHECK:         vector.gather %{{.+}}[%{{.+}}, %{{.+}}] [%{{.+}}], %{{.+}}, %{{.+}} : tensor<5x7xf32>
func.func @contiguous(%v: memref<5x7xf32, strided<[7, 1], offset: 14>>, %u: memref<1x7xf32, strided<[64, 1], offset: 3>>,
                      %d: memref<?x7xf32>, %t: tensor<5x7xf32>, %idx: vector<7xindex>)
    -> (vector<7xf32>, vector<7xf32>, vector<7xf32>, vector<7xf32>) {
  %c0 = arith.constant 0 : index
  %mask = arith.constant dense<true> : vector<7xi1>
  %pass = arith.constant dense<0.0> : vector<7xf32>
  %g = vector.gather %v[%c0, %c0] [%idx], %mask, %pass
      : memref<5x7xf32, strided<[7, 1], offset: 14>>, vector<7xindex>, vector<7xi1>, vector<7xf32> into vector<7xf32>
  %h = vector.gather %u[%c0, %c0] [%idx], %mask, %pass
      : memref<1x7xf32, strided<[64, 1], offset: 3>>, vector<7xindex>, vector<7xi1>, vector<7xf32> into vector<7xf32>
  %k = vector.gather %d[%c0, %c0] [%idx], %mask, %pass
      : memref<?x7xf32>, vector<7xindex>, vector<7xi1>, vector<7xf32> into vector<7xf32>
  %l = vector.gather %t[%c0, %c0] [%idx], %mask, %pass
      : tensor<5x7xf32>, vector<7xindex>, vector<7xi1>, vector<7xf32> into vector<7xf32>
  return %g, %h, %k, %l : vector<7xf32>, vector<7xf32>, vector<7xf32>, vector<7xf32>
}
