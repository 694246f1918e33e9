// flashattn-sm90-pipeline{unpipelined} (fa-compile --unpipelined): the
// warpgroup form, flashattn-tile's kernel distributed by
// flashattn-sm90-warpgroup alone on 64 x 64 tiles: one warpgroup of 128
// threads, no producer, and shared memory for one Q, one K and one V tile
// (3 x 64 x 64 x 2 = 24576 bytes) and their 3 mbarriers (24 bytes), no K /
// V ring. The pipelined kernel has a producer and two consumers (384
// threads).
// RUN: fa-opt %s --flashattn-sm90-pipeline="unpipelined" | FileCheck %s
// RUN: fa-opt %s --flashattn-sm90-pipeline | FileCheck %s --check-prefix=PIPELINED
// CHECK: flashattn.attention
// CHECK-SAME: kernel_abi<threads = 128, smem = 24600,
// PIPELINED: flashattn.attention
// PIPELINED-SAME: kernel_abi<threads = 384,
func.func @causal(%q: memref<2x512x8x64xbf16>, %k: memref<2x512x2x64xbf16>,
                  %v: memref<2x512x2x64xbf16>, %o: memref<2x512x8x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x512x8x64xbf16>, memref<2x512x2x64xbf16>, memref<2x512x2x64xbf16>)
      outs(%o : memref<2x512x8x64xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}
