// RUN: lowerline-opt %s --pass-pipeline="builtin.module(func.func(lowerline-split-empty-tensors))" \
// RUN:   | FileCheck %s

// A chain keeps its empty tensor (one-shot-bufferize can write in place);
// an op that reads nothing of the chain gets a fresh one, right before it,
// with the original's dynamic sizes.
// CHECK-LABEL: func.func @split(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?xf32>, %[[N:[^:]+]]: index)
// CHECK:         tensor.empty() : tensor<8xf32>
// CHECK:         %[[E:.+]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK:         %[[A:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E]] : tensor<?xf32>)
// CHECK:         %[[B:.+]] = linalg.add ins(%[[A]], %[[X]] : tensor<?xf32>, tensor<?xf32>) outs(%[[E]] : tensor<?xf32>)
// CHECK:         %[[E1:.+]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK-NEXT:    %[[C:.+]] = linalg.mul ins(%[[X]], %[[X]] : tensor<?xf32>, tensor<?xf32>) outs(%[[E1]] : tensor<?xf32>)
// The forall reads %c: it shares %c's empty tensor, also in its in_parallel.
// CHECK:         scf.forall (%{{.+}}) in (2) shared_outs(%[[O:.+]] = %[[E1]])
// CHECK:           linalg.exp ins(%[[C]] : tensor<?xf32>) outs(%[[E1]] : tensor<?xf32>)
// CHECK:           tensor.parallel_insert_slice %{{.+}} into %[[O]]
func.func @split(%x: tensor<?xf32>, %n: index) -> (tensor<?xf32>, tensor<?xf32>) {
  %one = arith.constant 1.0 : f32
  // Unused: left alone.
  %unused = tensor.empty() : tensor<8xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %a = linalg.fill ins(%one : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %b = linalg.add ins(%a, %x : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %c = linalg.mul ins(%x, %x : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = scf.forall (%i) in (2) shared_outs(%o = %e) -> tensor<?xf32> {
    %t = linalg.exp ins(%c : tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[0] [%n] [1] : tensor<?xf32> into tensor<?xf32>
    }
  }
  return %b, %r : tensor<?xf32>, tensor<?xf32>
}
