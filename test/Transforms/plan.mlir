// RUN: fa-opt %s --flashattn-plan --split-input-file | FileCheck %s --check-prefix=HOST
// RUN: fa-opt %s --flashattn-plan="target=sm90" --split-input-file | FileCheck %s --check-prefix=SM90
// RUN: fa-opt %s --flashattn-plan="target=sm90 consumers=1 block-n=64 stages=3" --split-input-file | FileCheck %s --check-prefix=OVERRIDE
// RUN: not fa-opt %s --flashattn-plan="target=sm90 block-n=-1" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADOVERRIDE
// RUN: not fa-opt %s --flashattn-plan="target=tpu" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: fa-opt %s --flashattn-plan="target=sm90 scheduler-barrier=off tma-store=off early-q-release=off rescale-under-qk=off l2-hint-q=normal l2-hint-kv=last" --split-input-file | FileCheck %s --check-prefix=CODEGEN
// RUN: not fa-opt %s --flashattn-plan="target=sm90 tma-store=maybe" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADSWITCH
// RUN: fa-opt %s --flashattn-plan="target=sm90 conditional-rescale=off" --split-input-file | FileCheck %s --check-prefix=NORESCALE
// RUN: not fa-opt %s --flashattn-plan="target=sm90 conditional-rescale=sometimes" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADRESCALE
// RUN: not fa-opt %s --flashattn-plan="target=sm90 l2-hint-kv=lru" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADL2
// RUN: fa-opt %s --flashattn-plan="target=sm90 descending-key-blocks=off" --split-input-file | FileCheck %s --check-prefix=ASCENDING
// RUN: not fa-opt %s --flashattn-plan="target=sm90 kv-heads-per-block=-2" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADHP
// RUN: fa-opt %s --flashattn-plan="target=sm90 rescale-under-qk=on" --split-input-file | FileCheck %s --check-prefix=UNDERQK
// RUN: not fa-opt %s --flashattn-plan="target=sm90 rescale-under-qk=always" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADUNDERQK
// RUN: fa-opt %s --flashattn-plan="target=sm90 descending-key-blocks=on" --split-input-file | FileCheck %s --check-prefix=FORCEDESC
// BADHP: error: flashattn-plan: kv-heads-per-block must be 0 (automatic) or positive, got -2
// RUN: not fa-opt %s --flashattn-plan="block-n=8192" --split-input-file 2>&1 | FileCheck %s --check-prefix=HOSTBIG
// RUN: not fa-opt %s --flashattn-plan="num-sms=-1" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADSMS
// RUN: not fa-opt %s --flashattn-plan="num-sms=-300" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADSMS300

// BAD: error: flashattn-plan: unknown target 'tpu' (expected host or sm90)
// The sm90 code-generation choices, each overridable: a test or a tuner
// pins them in the plan (#flashattn.sm90_codegen).
// CODEGEN-LABEL: func.func @prefill
// CODEGEN: plan = #flashattn.plan<{{.*}}, sm90 = <conditional_rescale = true, reduce_chains = 4, l2_hint_kv = evict_last, warp_specialize = true, intra_wg_overlap = true>>
// BADSWITCH: error: flashattn-plan: tma-store takes auto, on or off, got 'maybe'
// NORESCALE-LABEL: func.func @prefill
// NORESCALE-NOT: conditional_rescale
// NORESCALE: return
// BADRESCALE: error: flashattn-plan: conditional-rescale takes auto, on or off, got 'sometimes'
// BADUNDERQK: error: flashattn-plan: rescale-under-qk takes auto, on or off, got 'always'
// BADL2: error: flashattn-plan: l2-hint-kv takes auto, normal, first or last, got 'lru'
// BADOVERRIDE: error: flashattn-plan: block-m, block-n, consumers and stages must be 0 (automatic) or positive, got block-m=0 block-n=-1 consumers=0 stages=0
// A host tile override past what LLVM compiles in reasonable time is an
// error on the op, not an invalid plan attached to it.
// HOSTBIG: error: flashattn-plan: host plan tile sizes must be at most 4096 (what LLVM compiles in reasonable time), got block_m = 64, block_n = 8192
// The option's value as a number (it was once printed as a char, "got \xff").
// BADSMS: error: flashattn-plan: num-sms must be positive, got -1{{$}}
// BADSMS300: error: flashattn-plan: num-sms must be positive, got -300{{$}}

// Tile overrides (tuning): consumers alone sets sm90's block_m = 64 x
// consumers; the schedule, splits and packing stay automatic. One consumer
// takes no turns; O's tile (16 KB) fits beside Q and 3 stages of K and V
// (128 KB): the TMA store.
// OVERRIDE-LABEL: func.func @prefill
// OVERRIDE: plan = #flashattn.plan<target = sm90, block_m = 64, block_n = 64, stages = 3, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false, sm90 = <tma_store = true, early_q_release = true, conditional_rescale = true, rescale_under_qk = true, reduce_chains = 4, l2_hint_q = evict_first, warp_specialize = true, intra_wg_overlap = true>>

// Non-causal prefill, head_dim 128: 64x64 tiles on the host; on sm90
// 128x128 (2 consumer warpgroups of 64 rows), 2 K/V stages and the static
// persistent schedule; no split, no GQA packing (the 4 x 1000 query rows
// of a kv head do not fit one 128-row tile). The consumers take turns, O
// leaves by a TMA store (Q 32 KB, 2 stages of K and V 128 KB and O 32 KB
// fit 227 KB), a producer warpgroup loads and P V runs under the next
// block's softmax; no predicated Q release without a mask.
// HOST-LABEL: func.func @prefill
// HOST: plan = #flashattn.plan<target = host, block_m = 64, block_n = 64, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>
// SM90-LABEL: func.func @prefill
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 128, stages = 2, consumers = 2, schedule = static, num_splits = 1, pack_gqa = false, sm90 = <scheduler_barrier = true, tma_store = true, early_q_release = true, conditional_rescale = true, rescale_under_qk = true, reduce_chains = 4, l2_hint_q = evict_first, warp_specialize = true, intra_wg_overlap = true>>
func.func @prefill(%q: memref<2x1000x32x128xbf16>, %k: memref<2x1000x8x128xbf16>,
                   %v: memref<2x1000x8x128xbf16>, %o: memref<2x1000x32x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1000x32x128xbf16>, memref<2x1000x8x128xbf16>, memref<2x1000x8x128xbf16>)
      outs(%o : memref<2x1000x32x128xbf16>)
  return
}

// -----

// Causal decode over 32k keys: the host takes 1-row tiles; sm90 packs the 4
// query heads of each kv head into one tile; under the causal mask the key
// blocks are 128 and the schedule lpt. Automatic num_splits resolves to
// 1 on sm90 (explicit num_splits are honoured; see Plan.cpp). No TMA store
// with packed rows; at head_dim 128 under the causal mask the key blocks
// run from the last down and Q's early release is a branch in the unmasked
// loop (ascending with descending-key-blocks=off, and then the predicated
// arrive).
// HOST-LABEL: func.func @decode
// HOST: plan = #flashattn.plan<target = host, block_m = 1, block_n = 64, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>
// SM90-LABEL: func.func @decode
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 128, stages = 2, consumers = 2, schedule = lpt, num_splits = 1, pack_gqa = true, sm90 = <scheduler_barrier = true, early_q_release = true, conditional_rescale = true, rescale_under_qk = true, reduce_chains = 4, l2_hint_q = evict_first, warp_specialize = true, intra_wg_overlap = true, prefetch_next_q = true, descending_key_blocks = true>>
// ASCENDING-LABEL: func.func @decode
// ASCENDING: predicated_q_release = true
// ASCENDING-NOT: descending_key_blocks
// ASCENDING: return
func.func @decode(%q: memref<1x1x32x128xbf16>, %k: memref<1x32768x8x128xbf16>,
                  %v: memref<1x32768x8x128xbf16>, %o: memref<1x1x32x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1x32x128xbf16>, memref<1x32768x8x128xbf16>, memref<1x32768x8x128xbf16>)
      outs(%o : memref<1x1x32x128xbf16>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Explicit num_splits and pack_gqa are kept. head_dim 256 on sm90: key
// blocks of 64 (O is 128 registers per consumer thread). Split-KV partials
// are merged by the partial kernels themselves (fused_merge). Unmasked
// dense head_dim 256: Q released early, as the predicated arrive, and 4
// reduction chains.
// HOST-LABEL: func.func @explicit
// HOST: plan = #flashattn.plan<target = host, block_m = 16, block_n = 64, stages = 1, consumers = 1, schedule = static, num_splits = 3, pack_gqa = true>
// SM90-LABEL: func.func @explicit
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 64, stages = 2, consumers = 2, schedule = static, num_splits = 3, pack_gqa = true, sm90 = <scheduler_barrier = true, early_q_release = true, conditional_rescale = true, reduce_chains = 4, l2_hint_q = evict_first, warp_specialize = true, intra_wg_overlap = true, fused_merge = true, predicated_q_release = true>>
func.func @explicit(%q: memref<1x16x4x256xf16>, %k: memref<1x900x4x256xf16>,
                    %v: memref<1x900x4x256xf16>, %o: memref<1x16x4x256xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x16x4x256xf16>, memref<1x900x4x256xf16>, memref<1x900x4x256xf16>)
      outs(%o : memref<1x16x4x256xf16>) {num_splits = 3, pack_gqa = true}
  return
}

// -----

// A plan already present is left alone.
// HOST-LABEL: func.func @kept
// HOST: plan = #flashattn.plan<target = host, block_m = 32, block_n = 32, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>
// SM90-LABEL: func.func @kept
// SM90: plan = #flashattn.plan<target = host, block_m = 32, block_n = 32, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>
func.func @kept(%q: memref<1x16x4x64xf16>, %k: memref<1x90x4x64xf16>,
                %v: memref<1x90x4x64xf16>, %o: memref<1x16x4x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x16x4x64xf16>, memref<1x90x4x64xf16>, memref<1x90x4x64xf16>)
      outs(%o : memref<1x16x4x64xf16>)
      {plan = #flashattn.plan<target = host, block_m = 32, block_n = 32, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>}
  return
}

// -----

// Paged KV at head_dim 256 on sm90: 64-key blocks, whether TMA takes the
// pages (16: four boxes a block) or the producer copies rows (pages of 3);
// no early Q release at head_dim 256 over paged KV.
// SM90-LABEL: func.func @paged_hd256
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 64,
// SM90-NOT: early_q_release
// SM90-NOT: kv_row_copies
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 64,
// SM90-NOT: early_q_release
// SM90-SAME: kv_row_copies = true
func.func @paged_hd256(%q: memref<2x1x4x256xbf16>, %k16: memref<32x16x1x256xbf16>,
                       %k3: memref<32x3x1x256xbf16>, %su: memref<2xi32>,
                       %bt: memref<2x16xi32>, %o: memref<2x1x4x256xbf16>) {
  flashattn.attention ins(%q, %k16, %k16 : memref<2x1x4x256xbf16>, memref<32x16x1x256xbf16>, memref<32x16x1x256xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x4x256xbf16>)
  flashattn.attention ins(%q, %k3, %k3 : memref<2x1x4x256xbf16>, memref<32x3x1x256xbf16>, memref<32x3x1x256xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x4x256xbf16>)
  return
}

// -----

// A key block lies in one page or is whole pages: pages of 192 keys get
// 64-key blocks, pages of 32 128.
// SM90-LABEL: func.func @paged_blocks
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 64,
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 128,
func.func @paged_blocks(%q: memref<2x1x4x128xbf16>, %k192: memref<8x192x1x128xbf16>,
                       %k32: memref<32x32x1x128xbf16>, %su: memref<2xi32>,
                       %bt: memref<2x16xi32>, %o: memref<2x1x4x128xbf16>) {
  flashattn.attention ins(%q, %k192, %k192 : memref<2x1x4x128xbf16>, memref<8x192x1x128xbf16>, memref<8x192x1x128xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x4x128xbf16>)
  flashattn.attention ins(%q, %k32, %k32 : memref<2x1x4x128xbf16>, memref<32x32x1x128xbf16>, memref<32x32x1x128xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x4x128xbf16>)
  return
}

// -----

// The causal plan's tiles longest first (lpt), but under a left window,
// which bounds every tile's keys (static); at head_dim 128 O's rescale
// runs under the next Q K^T in both. The lpt tiles come from the launch's counter: at
// head_dim 128 the next tile's Q is loaded into a second buffer
// (prefetch_next_q), not with the static schedule. The key blocks run
// from the last down under the causal mask, not with a left window.
// SM90-LABEL: func.func @schedule
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 128, stages = 2, consumers = 2, schedule = lpt,
// SM90-SAME: rescale_under_qk = true
// SM90-SAME: prefetch_next_q = true, descending_key_blocks = true
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 128, stages = 2, consumers = 2, schedule = static,
// SM90-SAME: rescale_under_qk = true
// SM90-NOT: prefetch_next_q
// SM90-NOT: descending_key_blocks
// SM90: return
// A forced descending_key_blocks under the left window: flashattn-tile
// keeps those blocks ascending, so Q's release stays the predicated arrive.
// FORCEDESC-LABEL: func.func @schedule
// FORCEDESC: schedule = lpt,
// FORCEDESC-NOT: predicated_q_release
// FORCEDESC-SAME: descending_key_blocks = true
// FORCEDESC: schedule = static,
// FORCEDESC-SAME: predicated_q_release = true{{.*}}descending_key_blocks = true
// FORCEDESC: return
func.func @schedule(%q: memref<2x512x4x128xbf16>, %k: memref<2x512x4x128xbf16>,
                          %o: memref<2x512x4x128xbf16>) {
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>)
      outs(%o : memref<2x512x4x128xbf16>) {causal = #flashattn.causal<bottom_right>}
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>)
      outs(%o : memref<2x512x4x128xbf16>) {causal = #flashattn.causal<bottom_right>, window_size = array<i64: 256, 0>}
  return
}

// -----

// head_dim 64 (one split): 3 consumers over 192-row tiles, with the turns
// and the conditional rescale unmasked, with neither under a causal mask; Q
// released in a tile's last block in both; no TMA store with 3 consumers;
// under the causal mask (the counter's tiles) two Q buffers, the key
// blocks ascending.
// SM90-LABEL: func.func @consumers
// SM90: plan = #flashattn.plan<target = sm90, block_m = 192, block_n = 128, stages = 2, consumers = 3,
// SM90-SAME: scheduler_barrier = true, early_q_release = true, conditional_rescale = true
// SM90-NOT: prefetch_next_q
// SM90: plan = #flashattn.plan<target = sm90, block_m = 192, block_n = 128, stages = 2, consumers = 3, schedule = lpt
// SM90-SAME: sm90 = <early_q_release = true, l2_hint_q
// SM90-SAME: prefetch_next_q = true
// SM90-NOT: descending_key_blocks
// SM90: return
func.func @consumers(%q: memref<2x512x4x64xbf16>, %k: memref<2x512x4x64xbf16>,
                           %o: memref<2x512x4x64xbf16>) {
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x64xbf16>, memref<2x512x4x64xbf16>, memref<2x512x4x64xbf16>)
      outs(%o : memref<2x512x4x64xbf16>) {num_splits = 1 : i64}
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x64xbf16>, memref<2x512x4x64xbf16>, memref<2x512x4x64xbf16>)
      outs(%o : memref<2x512x4x64xbf16>) {causal = #flashattn.causal<bottom_right>, num_splits = 1 : i64}
  return
}

// -----

// head_dim 256: Q released in a tile's last block only unmasked, as the
// predicated arrive; not under a causal mask, where the key blocks stay
// ascending.
// SM90-LABEL: func.func @hd256
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 64,
// SM90-SAME: early_q_release = true
// SM90-SAME: predicated_q_release = true
// SM90: plan = #flashattn.plan<target = sm90, block_m = 128, block_n = 64,
// SM90-NOT: early_q_release
// SM90-NOT: descending_key_blocks
// SM90: return
func.func @hd256(%q: memref<2x512x4x256xbf16>, %k: memref<2x512x4x256xbf16>,
                       %o: memref<2x512x4x256xbf16>) {
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x256xbf16>, memref<2x512x4x256xbf16>, memref<2x512x4x256xbf16>)
      outs(%o : memref<2x512x4x256xbf16>) {num_splits = 1 : i64}
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x256xbf16>, memref<2x512x4x256xbf16>, memref<2x512x4x256xbf16>)
      outs(%o : memref<2x512x4x256xbf16>) {causal = #flashattn.causal<bottom_right>, num_splits = 1 : i64}
  return
}

// -----

// head_dim 128: O's rescale under the next Q K^T in the dense kernel, not
// in the split-KV form (num_splits 3), nor where the P V / softmax
// overlap is off (softcap), even when asked for (UNDERQK); off on request
// (CODEGEN).
// SM90-LABEL: func.func @under_qk
// SM90: plan = #flashattn.plan<target = sm90, {{.*}}num_splits = 1,
// SM90-SAME: rescale_under_qk = true
// SM90: plan = #flashattn.plan<target = sm90, {{.*}}num_splits = 3,
// SM90-NOT: rescale_under_qk
// SM90: softcap
// SM90-NOT: rescale_under_qk
// SM90: return
// UNDERQK-LABEL: func.func @under_qk
// UNDERQK: num_splits = 3, {{.*}}rescale_under_qk = true
// UNDERQK: plan = #flashattn.plan<target = sm90, {{.*}}num_splits = 1,
// UNDERQK-NOT: rescale_under_qk
// UNDERQK: return
func.func @under_qk(%q: memref<2x512x4x128xbf16>, %k: memref<2x512x4x128xbf16>,
                    %o: memref<2x512x4x128xbf16>) {
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>)
      outs(%o : memref<2x512x4x128xbf16>) {num_splits = 1 : i64}
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>)
      outs(%o : memref<2x512x4x128xbf16>) {num_splits = 3 : i64}
  flashattn.attention ins(%q, %k, %k : memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>, memref<2x512x4x128xbf16>)
      outs(%o : memref<2x512x4x128xbf16>) {num_splits = 1 : i64, softcap = 30.0 : f32}
  return
}
