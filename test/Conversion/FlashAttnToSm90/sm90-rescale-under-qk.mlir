// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s

// The plan's rescale_under_qk (flashattn-plan's at head_dim 128 with the
// overlap): in the overlapped key-block loop O's rescale by the previous
// block's alpha (a carried value) runs after this block's Q K^T is
// issued, under it, then wgmma.fence (the rescale wrote O's registers)
// and the previous block's P V. The softmax waits for that P V before its
// P's exp2s (nothing of O is left for it to move) and leaves O alone.
// CHECK-LABEL: func.func @under_qk
// CHECK: rescale_under_qk = true
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
// CHECK-NOT: scf.yield
// CHECK: llvm.nvvm.ex2
// CHECK-NOT: nvvm.vote.sync
// CHECK: scf.yield
func.func @under_qk(%q: memref<1x200x2x128xbf16>, %k: memref<1x200x2x128xbf16>, %v: memref<1x200x2x128xbf16>,
                    %o: memref<1x200x2x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>, memref<1x200x2x128xbf16>)
      outs(%o : memref<1x200x2x128xbf16>)
  return
}
