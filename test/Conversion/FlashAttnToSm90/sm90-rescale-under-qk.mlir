// RUN: fa-opt %s --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s

// The plan's rescale_under_qk (here written in the plan; flashattn-plan
// does not take it): in the overlapped key-block loop O's rescale
// by the previous block's alpha (a carried value) runs after this block's
// Q K^T is issued, under it, then wgmma.fence (the rescale wrote O's
// registers) and the previous block's P V; the softmax after the waits
// leaves O alone.
// CHECK-LABEL: func.func @under_qk
// CHECK: } consumers {
// CHECK: scf.for
// CHECK: scf.for
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvvm.wgmma.wait
// CHECK: arith.cmpf une
// CHECK: %[[ANY:.*]] = nvvm.vote.sync  any
// CHECK-NEXT: %[[O:.*]] = scf.if %[[ANY]]
// CHECK: arith.mulf
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: flashattn.wgmma_rs %[[O]],
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvvm.vote.sync
// CHECK: scf.yield
func.func @under_qk(%q: memref<1x200x2x128xbf16>, %k: memref<1x200x2x128xbf16>, %v: memref<1x200x2x128xbf16>,
                    %o: memref<1x200x2x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>)
      outs(%o : memref<1x200x2x128xbf16>) {plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 128, stages = 2, consumers = 2, schedule = static, num_splits = 1, pack_gqa = false, sm90 = <scheduler_barrier = true, early_q_release = true, conditional_rescale = true, rescale_under_qk = true, reduce_chains = 1, warp_specialize = true, intra_wg_overlap = true>>}
  return
}
