// RUN: lowerline-opt %s -o /dev/null --explore %t.html \
// RUN:   --pass-pipeline="builtin.module(func.func(linalg-generalize-named-ops),cse)"
// RUN: FileCheck %s --input-file=%t.html
// RUN: not lowerline-opt %s --split-input-file --explore %t-split.html \
// RUN:   --pass-pipeline="builtin.module(cse)" 2>&1 | FileCheck %s --check-prefix=SPLIT

// --explore writes one page holding every pass in order, with its stage, wall
// time and whether it changed the IR; the named op becomes a linalg.generic.
// CHECK:      <script id="lowerline-data" type="application/json">
// CHECK-SAME: "passes":[{"stage":"input","label":"(input)","seconds":0.0,"text":0,"changed":false}
// CHECK-SAME: {"stage":"pipeline","label":"func.func(linalg-generalize-named-ops)","seconds":{{[0-9.e-]+}},"text":1,"changed":true}
// CHECK-SAME: {"stage":"pipeline","label":"cse","seconds":{{[0-9.e-]+}},"text":1,"changed":false}]
// CHECK-SAME: linalg.generic

// SPLIT: error: --explore shows one module: leave out --split-input-file
func.func @negate(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = tensor.empty() : tensor<3xf32>
  %0 = linalg.negf ins(%x : tensor<3xf32>) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
