// RUN: lowerline-opt %s --mlir-print-debuginfo | FileCheck %s
// RUN: lowerline-opt %s --mlir-print-debuginfo --split-input-file | FileCheck %s --check-prefix=SPLIT

// --mlir-print-debuginfo prints each op's location: the input file, line, column.
// CHECK-LABEL: func.func @located(
// CHECK-SAME:      %arg0: i32 loc("{{.*}}print-debuginfo.mlir":[[@LINE+9]]:20)
// CHECK:         arith.addi {{.*}} loc(#[[ADD:loc[0-9]*]])
// CHECK:         return {{.*}} loc(#[[RET:loc[0-9]*]])
// CHECK:       } loc(#[[FUNC:loc[0-9]*]])
// CHECK-DAG:   #[[FUNC]] = loc("{{.*}}print-debuginfo.mlir":[[@LINE+5]]:1)
// CHECK-DAG:   #[[ADD]] = loc("{{.*}}print-debuginfo.mlir":[[@LINE+5]]:8)
// CHECK-DAG:   #[[RET]] = loc("{{.*}}print-debuginfo.mlir":[[@LINE+5]]:3)
// SPLIT-LABEL: func.func @located(
// SPLIT-LABEL: func.func @located_in_second_chunk(
func.func @located(%x: i32) -> i32 {
  %0 = arith.addi %x, %x : i32
  return %0 : i32
}

// -----

// In a split chunk, lines still count from the start of the whole file.
// SPLIT:         return loc(#[[RET2:loc[0-9]*]])
// SPLIT:       #[[RET2]] = loc("{{.*}}print-debuginfo.mlir":[[@LINE+2]]:3)
func.func @located_in_second_chunk() {
  return
}
