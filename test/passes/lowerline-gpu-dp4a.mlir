// lowerline-gpu-dp4a: inside gpu.modules, a vector.reduction <add> of the
// products of two extended vector<4xi8> into i32 becomes one
// nvvm.dot.accumulate.4way (PTX dp4a), each side signed or unsigned as its
// extension says.
// RUN: lowerline-opt %s --pass-pipeline="builtin.module(lowerline-gpu-dp4a)" | FileCheck %s

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // Signed x signed with an accumulator: one dp4a.s32.s32.
    // CHECK-LABEL: gpu.func @signed
    // CHECK-SAME:      (%[[A:[^:]+]]: vector<4xi8>, %[[B:[^:]+]]: vector<4xi8>, %[[C:[^:]+]]: i32
    // CHECK-NEXT:    %[[D:.+]] = nvvm.dot.accumulate.4way %[[A]] <signed>, %[[B]] <signed>, %[[C]] : vector<4xi8>, vector<4xi8>
    // CHECK-NEXT:    gpu.return %[[D]] : i32
    gpu.func @signed(%a: vector<4xi8>, %b: vector<4xi8>, %c: i32) -> i32 {
      %ea = arith.extsi %a : vector<4xi8> to vector<4xi32>
      %eb = arith.extsi %b : vector<4xi8> to vector<4xi32>
      %p = arith.muli %ea, %eb : vector<4xi32>
      %s = vector.reduction <add>, %p, %c : vector<4xi32> into i32
      gpu.return %s : i32
    }

    // Unsigned x signed, no accumulator: dp4a.u32.s32 adding to 0.
    // CHECK-LABEL: gpu.func @unsigned_by_signed
    // CHECK:         %[[ZERO:.+]] = arith.constant 0 : i32
    // CHECK:         nvvm.dot.accumulate.4way %{{.+}} <unsigned>, %{{.+}} <signed>, %[[ZERO]]
    // CHECK-NOT:     vector.reduction
    gpu.func @unsigned_by_signed(%a: vector<4xi8>, %b: vector<4xi8>) -> i32 {
      %ea = arith.extui %a : vector<4xi8> to vector<4xi32>
      %eb = arith.extsi %b : vector<4xi8> to vector<4xi32>
      %p = arith.muli %ea, %eb : vector<4xi32>
      %s = vector.reduction <add>, %p : vector<4xi32> into i32
      gpu.return %s : i32
    }

    // Not fired: eight bytes (dp4a takes four).
    // CHECK-LABEL: gpu.func @eight_bytes
    // CHECK-NOT:     nvvm.dot.accumulate.4way
    // CHECK:         vector.reduction <add>
    gpu.func @eight_bytes(%a: vector<8xi8>, %b: vector<8xi8>) -> i32 {
      %ea = arith.extsi %a : vector<8xi8> to vector<8xi32>
      %eb = arith.extsi %b : vector<8xi8> to vector<8xi32>
      %p = arith.muli %ea, %eb : vector<8xi32>
      %s = vector.reduction <add>, %p : vector<8xi32> into i32
      gpu.return %s : i32
    }

    // Not fired: i16 sources, a maximum instead of a sum, a sum of i32
    // values that are not byte products.
    // CHECK-LABEL: gpu.func @not_byte_dots
    // CHECK-NOT:     nvvm.dot.accumulate.4way
    // CHECK-COUNT-3: vector.reduction
    gpu.func @not_byte_dots(%a: vector<4xi16>, %b: vector<4xi16>, %x: vector<4xi32>) -> i32 {
      %ea = arith.extsi %a : vector<4xi16> to vector<4xi32>
      %eb = arith.extsi %b : vector<4xi16> to vector<4xi32>
      %p = arith.muli %ea, %eb : vector<4xi32>
      %s = vector.reduction <add>, %p : vector<4xi32> into i32
      %m = vector.reduction <maxsi>, %p, %s : vector<4xi32> into i32
      %t = vector.reduction <add>, %x, %m : vector<4xi32> into i32
      gpu.return %t : i32
    }
  }

  // Not fired: host code (the CPU has no dp4a).
  // CHECK-LABEL: func.func @host
  // CHECK-NOT:     nvvm.dot.accumulate.4way
  // CHECK:         vector.reduction <add>
  func.func @host(%a: vector<4xi8>, %b: vector<4xi8>) -> i32 {
    %ea = arith.extsi %a : vector<4xi8> to vector<4xi32>
    %eb = arith.extsi %b : vector<4xi8> to vector<4xi32>
    %p = arith.muli %ea, %eb : vector<4xi32>
    %s = vector.reduction <add>, %p : vector<4xi32> into i32
    return %s : i32
  }
}
