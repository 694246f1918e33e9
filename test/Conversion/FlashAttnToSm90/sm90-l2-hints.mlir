// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 l2-hint-q=normal l2-hint-kv=last" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s --check-prefix=KV

// The plan's L2 priorities as the TMA loads' cache hints: by default Q
// evict_first (a tile reads its Q once) and K / V normal (no hint); each
// policy made right before its load.
// CHECK-LABEL: func.func @dense
// CHECK: flashattn.warp_specialize
// CHECK: %[[QP:.*]] = flashattn.l2_policy evict_first
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[QMAP:[a-z0-9]+]], %{{.*}} l2_cache_hint = %[[QP]]
// CHECK-NOT: flashattn.l2_policy
// CHECK-NOT: l2_cache_hint
// CHECK: } consumers {

// l2-hint-q=normal l2-hint-kv=last: Q without a hint, each K and V load
// with an evict_last policy of its own.
// KV-LABEL: func.func @dense
// KV: flashattn.warp_specialize
// KV-NOT: flashattn.l2_policy
// KV: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}} box[%{{[^]]*}}] :
// KV: %[[KP:.*]] = flashattn.l2_policy evict_last
// KV: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}} l2_cache_hint = %[[KP]]
// KV: %[[VP:.*]] = flashattn.l2_policy evict_last
// KV: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}} l2_cache_hint = %[[VP]]
func.func @dense(%q: memref<2x256x4x64xbf16>, %k: memref<2x256x4x64xbf16>, %v: memref<2x256x4x64xbf16>,
                 %o: memref<2x256x4x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x256x4x64xbf16>, memref<2x256x4x64xbf16>, memref<2x256x4x64xbf16>)
      outs(%o : memref<2x256x4x64xbf16>)
  return
}
