// flashattn-plan on sm90: the limits of the kernel's plan, and a given
// plan completed with the automatic code-generation choices.
// RUN: not fa-opt %s --flashattn-plan="target=sm90 kv-heads-per-block=3" --split-input-file 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: not fa-opt %s --flashattn-plan="target=sm90 consumers=4" --split-input-file 2>&1 | FileCheck %s --check-prefix=CONSUMERS
// RUN: fa-opt %s --flashattn-plan="target=sm90" --split-input-file 2>&1 | FileCheck %s --check-prefix=GIVEN

// kv_heads_per_block only packs the kv heads of paged pack_gqa kernels.
// HEADS: error: flashattn-plan: kv-heads-per-block applies to pack_gqa kernels over paged KV
// A 4th consumer warpgroup: more than setmaxnreg can give registers to.
// CONSUMERS: error: flashattn-plan: the sm90 kernel takes 1 to 3 consumer warpgroups, got 4
func.func @dense(%q: memref<1x256x2x64xbf16>, %k: memref<1x256x2x64xbf16>, %v: memref<1x256x2x64xbf16>,
                 %o: memref<1x256x2x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x256x2x64xbf16>, memref<1x256x2x64xbf16>, memref<1x256x2x64xbf16>)
      outs(%o : memref<1x256x2x64xbf16>)
  return
}

// -----

// Over pages of 16 keys with Hq / Hkv = 2: 3 kv heads a key block divide
// neither 8 nor Hkv = 2.
// HEADS: error: flashattn-plan: kv-heads-per-block = 3 needs to divide 8 and Hkv (2)
func.func @paged(%q: memref<2x1x4x64xf16>, %kc: memref<16x16x2x64xf16>, %vc: memref<16x16x2x64xf16>,
                 %bt: memref<2x8xi32>, %used: memref<2xi32>, %o: memref<2x1x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<16x16x2x64xf16>, memref<16x16x2x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      outs(%o : memref<2x1x4x64xf16>) {pack_gqa = true}
  return
}

// -----

// A given sm90 plan keeps its tiles and gets the automatic code-generation
// choices (a producer warpgroup, the overlap of P V with the next block).
// GIVEN-LABEL: func.func @given
// GIVEN: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 64, stages = 2, consumers = 2, {{.*}}sm90 = <{{.*}}warp_specialize = true{{.*}}>
func.func @given(%q: memref<1x256x2x64xbf16>, %k: memref<1x256x2x64xbf16>, %v: memref<1x256x2x64xbf16>,
                 %o: memref<1x256x2x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x256x2x64xbf16>, memref<1x256x2x64xbf16>, memref<1x256x2x64xbf16>)
      outs(%o : memref<1x256x2x64xbf16>) {plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 64, stages = 2, consumers = 2, schedule = static, num_splits = 1, pack_gqa = false>}
  return
}
