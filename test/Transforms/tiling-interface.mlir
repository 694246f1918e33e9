// RUN: fa-opt %s --transform-interpreter --split-input-file --verify-diagnostics | FileCheck %s

// flashattn.attention's TilingInterface: the iteration domain is (batch,
// kv head, query row). A tile of kv heads [g, g + 1) takes query heads
// [4 g, 4 g + 4) (GQA 8 / 2), all of k and v's keys of that kv head, and
// the matching out and lse tiles; partial row tiles (70 rows by 16) are
// the op on smaller slices.
// CHECK: #[[QH:.*]] = affine_map<(d0) -> (d0 * 4)>
// CHECK-LABEL: func.func @gqa
// CHECK: scf.for %[[B:.*]] = %c0 to %c2 step %c1
// CHECK:   scf.for %[[G:.*]] = %c0{{.*}} to %c2{{.*}} step %c1
// CHECK:     scf.for %[[I:.*]] = %c0{{.*}} to %c70 step %c16 iter_args(%[[OI:.*]] = %{{.*}}, %[[LI:.*]] = %{{.*}})
// CHECK:       %[[ROWS:.*]] = affine.min
// CHECK:       %[[H:.*]] = affine.apply #[[QH]](%[[G]])
// CHECK:       %[[Q:.*]] = tensor.extract_slice %arg0[%[[B]], %[[I]], %[[H]], 0] [1, %[[ROWS]], 4, 64]
// CHECK:       %[[K:.*]] = tensor.extract_slice %arg1[%[[B]], 0, %[[G]], 0] [1, 90, 1, 64]
// CHECK:       %[[V:.*]] = tensor.extract_slice %arg2[%[[B]], 0, %[[G]], 0] [1, 90, 1, 64]
// CHECK:       %[[O:.*]] = tensor.extract_slice %[[OI]][%[[B]], %[[I]], %[[H]], 0] [1, %[[ROWS]], 4, 64]
// CHECK:       %[[L:.*]] = tensor.extract_slice %[[LI]][%[[B]], %[[H]], %[[I]]] [1, 4, %[[ROWS]]]
// CHECK:       %[[RO:.*]], %[[RL:.*]] = flashattn.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<1x?x4x64xbf16>, tensor<1x90x1x64xbf16>, tensor<1x90x1x64xbf16>) outs(%[[O]], %[[L]] : tensor<1x?x4x64xbf16>, tensor<1x4x?xf32>) {softcap = 2.000000e+00 : f32}
// CHECK:       tensor.insert_slice %[[RO]] into %[[OI]][%[[B]], %[[I]], %{{.*}}, 0] [1, %[[ROWS]], 4, 64]
// CHECK:       tensor.insert_slice %[[RL]] into %[[LI]][%[[B]], %{{.*}}, %[[I]]] [1, 4, %[[ROWS]]]
module attributes {transform.with_named_sequence} {
  func.func @gqa(%q: tensor<2x70x8x64xbf16>, %k: tensor<2x90x2x64xbf16>, %v: tensor<2x90x2x64xbf16>,
                 %o: tensor<2x70x8x64xbf16>, %l: tensor<2x8x70xf32>) -> (tensor<2x70x8x64xbf16>, tensor<2x8x70xf32>) {
    %r:2 = flashattn.attention ins(%q, %k, %v : tensor<2x70x8x64xbf16>, tensor<2x90x2x64xbf16>, tensor<2x90x2x64xbf16>)
        outs(%o, %l : tensor<2x70x8x64xbf16>, tensor<2x8x70xf32>) {softcap = 2.0 : f32} -> tensor<2x70x8x64xbf16>, tensor<2x8x70xf32>
    return %r#0, %r#1 : tensor<2x70x8x64xbf16>, tensor<2x8x70xf32>
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["flashattn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %loops:3 = transform.structured.tile_using_for %a tile_sizes [1, 1, 16] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// ALiBi slopes [B, Hq] follow the batch and head tiles.
// CHECK-LABEL: func.func @alibi_causal
// CHECK: %[[S:.*]] = tensor.extract_slice %arg3[%{{.*}}, %{{.*}}] [1, 2] [1, 1] : tensor<2x4xf32> to tensor<1x2xf32>
// CHECK: flashattn.attention ins(%{{.*}} : tensor<1x30x2x32xf16>, tensor<1x40x1x32xf16>, tensor<1x40x1x32xf16>) alibi_slopes(%[[S]] : tensor<1x2xf32>)
module attributes {transform.with_named_sequence} {
  func.func @alibi_causal(%q: tensor<2x30x4x32xf16>, %k: tensor<2x40x2x32xf16>, %v: tensor<2x40x2x32xf16>,
                          %al: tensor<2x4xf32>, %o: tensor<2x30x4x32xf16>) -> tensor<2x30x4x32xf16> {
    %r = flashattn.attention ins(%q, %k, %v : tensor<2x30x4x32xf16>, tensor<2x40x2x32xf16>, tensor<2x40x2x32xf16>)
        alibi_slopes(%al : tensor<2x4xf32>)
        outs(%o : tensor<2x30x4x32xf16>) {causal = #flashattn.causal<bottom_right>} -> tensor<2x30x4x32xf16>
    return %r : tensor<2x30x4x32xf16>
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["flashattn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %loops:2 = transform.structured.tile_using_for %a tile_sizes [1, 1, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Rows of a causal op: each tile's op gets q_start = its first row and
// seqlen_q = 30, so its rows keep their positions.
// CHECK-LABEL: func.func @causal_rows
// CHECK: scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %c8
// CHECK:   flashattn.attention ins(%{{.*}} : tensor<1x?x2x32xf16>, tensor<1x40x2x32xf16>, tensor<1x40x2x32xf16>) q_start(%[[I]]) seqlen_q(%c30{{.*}}) outs
module attributes {transform.with_named_sequence} {
  func.func @causal_rows(%q: tensor<1x30x2x32xf16>, %k: tensor<1x40x2x32xf16>, %v: tensor<1x40x2x32xf16>,
                         %o: tensor<1x30x2x32xf16>) -> tensor<1x30x2x32xf16> {
    %r = flashattn.attention ins(%q, %k, %v : tensor<1x30x2x32xf16>, tensor<1x40x2x32xf16>, tensor<1x40x2x32xf16>)
        outs(%o : tensor<1x30x2x32xf16>) {causal = #flashattn.causal<top_left>} -> tensor<1x30x2x32xf16>
    return %r : tensor<1x30x2x32xf16>
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["flashattn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %loops = transform.structured.tile_using_for %a tile_sizes [0, 0, 8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  func.func @head_region(%q: tensor<1x30x2x32xf16>, %k: tensor<1x40x2x32xf16>, %v: tensor<1x40x2x32xf16>,
                         %o: tensor<1x30x2x32xf16>) -> tensor<1x30x2x32xf16> {
    // expected-remark @+3 {{does not tile the heads: a region reads %h}}
    // expected-error @+2 {{faild to tile operation}}
    // expected-error @+1 {{failed to generate tiling loops}}
    %r = flashattn.attention ins(%q, %k, %v : tensor<1x30x2x32xf16>, tensor<1x40x2x32xf16>, tensor<1x40x2x32xf16>)
        outs(%o : tensor<1x30x2x32xf16>)
        mask(%b: index, %h: index, %i: index, %j: index) {
          %c0 = arith.constant 0 : index
          %keep = arith.cmpi eq, %h, %c0 : index
          flashattn.yield %keep : i1
        } -> tensor<1x30x2x32xf16>
    return %r : tensor<1x30x2x32xf16>
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["flashattn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %loops = transform.structured.tile_using_for %a tile_sizes [0, 1, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Tile-and-fuse: a consumer of out tiled over (b, i, h, e) pulls the
// attention into its loops (generateResultTileValue: every e, heads 1:1
// here, MHA), the op on the matching q / k / v tiles.
// CHECK-LABEL: func.func @fused
// CHECK: scf.for %[[B:[a-z0-9_]+]] =
// CHECK:   scf.for %[[I:[a-z0-9_]+]] =
// CHECK:     scf.for %[[H:[a-z0-9_]+]] =
// CHECK:       %[[Q:.*]] = tensor.extract_slice %arg0[%[[B]], %[[I]], %[[H]], 0] [1, 8, 1, 32]
// CHECK:       %[[K:.*]] = tensor.extract_slice %arg1[%[[B]], 0, %[[H]], 0] [1, 40, 1, 32]
// CHECK:       %[[O:.*]] = flashattn.attention ins(%[[Q]], %[[K]], %{{.*}} : tensor<1x8x1x32xf16>, tensor<1x40x1x32xf16>, tensor<1x40x1x32xf16>)
// CHECK:       linalg.generic {{.*}} ins(%[[O]] : tensor<1x8x1x32xf16>)
module attributes {transform.with_named_sequence} {
  func.func @fused(%q: tensor<2x32x4x32xf16>, %k: tensor<2x40x4x32xf16>, %v: tensor<2x40x4x32xf16>,
                   %o: tensor<2x32x4x32xf16>, %y: tensor<2x32x4x32xf32>) -> tensor<2x32x4x32xf32> {
    %r = flashattn.attention ins(%q, %k, %v : tensor<2x32x4x32xf16>, tensor<2x40x4x32xf16>, tensor<2x40x4x32xf16>)
        outs(%o : tensor<2x32x4x32xf16>) -> tensor<2x32x4x32xf16>
    %e = linalg.generic {indexing_maps = [affine_map<(b, i, h, e) -> (b, i, h, e)>, affine_map<(b, i, h, e) -> (b, i, h, e)>],
                         iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%r : tensor<2x32x4x32xf16>) outs(%y : tensor<2x32x4x32xf32>) {
    ^bb0(%x: f16, %acc: f32):
      %w = arith.extf %x : f16 to f32
      linalg.yield %w : f32
    } -> tensor<2x32x4x32xf32>
    return %e : tensor<2x32x4x32xf32>
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %g = transform.structured.match ops{["linalg.generic"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %loops:3 = transform.structured.fuse %g tile_sizes [1, 8, 1, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Tile-and-fuse under GQA (4 query heads over 2 kv heads): the consumer's
// head loop steps by G = 2, so its tile of query heads [h, h + 2) is the kv
// head h / 2 (affine floordiv of the loop's induction variable).
// CHECK-LABEL: func.func @fused_gqa
// CHECK: scf.for %[[B:[a-z0-9_]+]] =
// CHECK:   scf.for %[[I:[a-z0-9_]+]] =
// CHECK:     scf.for %[[H:[a-z0-9_]+]] =
// CHECK:       %[[G:.*]] = affine.apply #{{.*}}(%[[H]])
// CHECK:       %[[Q:.*]] = tensor.extract_slice %arg0[%[[B]], %[[I]], %{{.*}}, 0] [1, 8, 2, 32]
// CHECK:       %[[K:.*]] = tensor.extract_slice %arg1[%[[B]], 0, %[[G]], 0] [1, 40, 1, 32]
// CHECK:       %[[O:.*]] = flashattn.attention ins(%[[Q]], %[[K]], %{{.*}} : tensor<1x8x2x32xf16>, tensor<1x40x1x32xf16>, tensor<1x40x1x32xf16>)
// CHECK:       linalg.generic {{.*}} ins(%[[O]] : tensor<1x8x2x32xf16>)
module attributes {transform.with_named_sequence} {
  func.func @fused_gqa(%q: tensor<2x32x4x32xf16>, %k: tensor<2x40x2x32xf16>, %v: tensor<2x40x2x32xf16>,
                   %o: tensor<2x32x4x32xf16>, %y: tensor<2x32x4x32xf32>) -> tensor<2x32x4x32xf32> {
    %r = flashattn.attention ins(%q, %k, %v : tensor<2x32x4x32xf16>, tensor<2x40x2x32xf16>, tensor<2x40x2x32xf16>)
        outs(%o : tensor<2x32x4x32xf16>) -> tensor<2x32x4x32xf16>
    %e = linalg.generic {indexing_maps = [affine_map<(b, i, h, e) -> (b, i, h, e)>, affine_map<(b, i, h, e) -> (b, i, h, e)>],
                         iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%r : tensor<2x32x4x32xf16>) outs(%y : tensor<2x32x4x32xf32>) {
    ^bb0(%x: f16, %acc: f32):
      %w = arith.extf %x : f16 to f32
      linalg.yield %w : f32
    } -> tensor<2x32x4x32xf32>
    return %e : tensor<2x32x4x32xf32>
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %g = transform.structured.match ops{["linalg.generic"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %loops:3 = transform.structured.fuse %g tile_sizes [1, 8, 2, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Dynamic batch and rows: a row tile is told from the whole extent through
// value bounds, so tiling only the batch adds no q_start, and a region
// reading %b does not stop tiling rows.
// CHECK-LABEL: func.func @dynamic_batch_only
// CHECK: flashattn.attention ins(%{{.*}} : tensor<1x?x2x32xf16>, tensor<1x40x2x32xf16>, tensor<1x40x2x32xf16>) outs
// CHECK-NOT: q_start
module attributes {transform.with_named_sequence} {
  func.func @dynamic_batch_only(%q: tensor<?x?x2x32xf16>, %k: tensor<?x40x2x32xf16>, %v: tensor<?x40x2x32xf16>,
                                %o: tensor<?x?x2x32xf16>) -> tensor<?x?x2x32xf16> {
    %r = flashattn.attention ins(%q, %k, %v : tensor<?x?x2x32xf16>, tensor<?x40x2x32xf16>, tensor<?x40x2x32xf16>)
        outs(%o : tensor<?x?x2x32xf16>) {causal = #flashattn.causal<bottom_right>} -> tensor<?x?x2x32xf16>
    return %r : tensor<?x?x2x32xf16>
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["flashattn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %loops = transform.structured.tile_using_for %a tile_sizes [1, 0, 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
