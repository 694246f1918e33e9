// RUN: fa-opt %s --transform-interpreter | FileCheck %s

// The decomposition is flashattn.attention's linalg::AggregatedOpInterface:
// upstream's transform.structured.decompose_interface runs it too.
// CHECK-LABEL: func.func @dense
// CHECK-NOT: flashattn.attention
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: return
module attributes {transform.with_named_sequence} {
  func.func @dense(%q: tensor<1x4x2x16xf16>, %k: tensor<1x6x2x16xf16>, %v: tensor<1x6x2x16xf16>,
                   %o: tensor<1x4x2x16xf16>) -> tensor<1x4x2x16xf16> {
    %r = flashattn.attention ins(%q, %k, %v : tensor<1x4x2x16xf16>, tensor<1x6x2x16xf16>, tensor<1x6x2x16xf16>)
        outs(%o : tensor<1x4x2x16xf16>) -> tensor<1x4x2x16xf16>
    return %r : tensor<1x4x2x16xf16>
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["flashattn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %a : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
