// REQUIRES: ptxas
// The sm90 kernels (flashattn-tile's kernel on flashattn-plan's tiles, its
// K / V loads pipelined by flashattn-sm90-pipeline-kv, split into a
// producer warpgroup and the consumers by flashattn-sm90-warp-specialize
// but with softcap at head_dim 256, distributed over the warpgroups by
// flashattn-sm90-warpgroup) assemble for sm_90a with no spills and no
// C75xx warnings (ptxas serializing wgmma).
// head_dim 64 (3 consumers), 128 and 256, causal masks, GQA, a window with
// softcap at head_dim 64 (2 consumers) and at head_dim 256 (no producer):
// RUN: fa-compile --target sm90 --d 64 --dtype bf16 --causal bottom_right --lse --emit-ptx > %t64.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t64.ptx -o %t64.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --lse --emit-ptx > %t128.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t128.ptx -o %t128.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 128 --dtype f16 --hq 8 --hkv 2 --lse --emit-ptx > %t128g.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t128g.ptx -o %t128g.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 256 --dtype f16 --causal top_left --emit-ptx > %t256.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t256.ptx -o %t256.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 64 --dtype f16 --window-left 100 --window-right 50 --softcap 30 --lse --emit-ptx > %twin.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %twin.ptx -o %twin.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 256 --dtype bf16 --window-left 100 --window-right 0 --softcap 30 --emit-ptx > %t256w.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t256w.ptx -o %t256w.cubin 2>&1 | FileCheck %s
// Split-KV (the partial kernel and the combine), automatic splits with
// automatic pack_gqa (the dense and packed twins too) and with pack_gqa:
// RUN: fa-compile --target sm90 --d 64 --dtype f16 --num-splits 3 --lse --emit-ptx > %tsp.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tsp.ptx -o %tsp.cubin 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --hq 32 --hkv 8 --causal bottom_right --num-splits 0 --lse --emit-ptx > %ttw.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %ttw.ptx -o %ttw.cubin 2>&1 | FileCheck %s --check-prefix=TWINS
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --hq 32 --hkv 8 --causal bottom_right --pack-gqa 1 --num-splits 0 --emit-ptx > %tpack.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tpack.ptx -o %tpack.cubin 2>&1 | FileCheck %s
// Varlen with seqused_k (the tile table) at head_dim 64 (3 consumers) and
// 128, and varlen with pack_gqa:
// RUN: fa-compile --target sm90 --d 64 --dtype bf16 --varlen-q --varlen-k --seqused-k --lse --emit-ptx > %tvl.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tvl.ptx -o %tvl.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --varlen-q --varlen-k --seqused-k --lse --emit-ptx > %tvl128.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tvl128.ptx -o %tvl128.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 128 --dtype f16 --hq 32 --hkv 8 --causal bottom_right --varlen-q --varlen-k --pack-gqa 1 --lse --emit-ptx > %tvlp.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tvlp.ptx -o %tvlp.cubin 2>&1 | FileCheck %s
// Paged KV by TMA boxes (pages of 64, and of 16 keys in the page panel
// layout), pack_gqa over pages of 16 keys with 4 kv heads a key block and
// the fused merge (the decode kernel), and by per-row copies (pages of 1
// with an append, the 40-register producer copying; pages of 3 at head_dim
// 256, the plan's 64-key blocks):
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --hq 32 --hkv 8 --causal bottom_right --seqused-k --page-size 64 --lse --emit-ptx > %tpg.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tpg.ptx -o %tpg.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 64 --dtype f16 --hq 8 --hkv 2 --causal bottom_right --seqused-k --page-size 16 --emit-ptx > %tp16.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tp16.ptx -o %tp16.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --hq 32 --hkv 8 --causal bottom_right --seqused-k --page-size 16 --pack-gqa 1 --num-splits 0 --fused-merge on --lse --emit-ptx > %tkv.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tkv.ptx -o %tkv.cubin 2>&1 | FileCheck %s --check-prefix=KVHEADS
// RUN: fa-compile --target sm90 --d 64 --dtype f16 --seqused-k --page-size 1 --append --lse --emit-ptx > %tpg1.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tpg1.ptx -o %tpg1.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 256 --dtype f16 --hq 4 --hkv 4 --causal bottom_right --seqused-k --page-size 3 --lse --emit-ptx > %tpg3.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tpg3.ptx -o %tpg3.cubin 2>&1 | FileCheck %s
// kv-cache append into a dense cache (the copy kernel too):
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --hq 8 --hkv 2 --causal bottom_right --append --lse --emit-ptx > %tap.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tap.ptx -o %tap.cubin 2>&1 | FileCheck %s --check-prefix=APPEND
// CHECK-NOT: warning
// CHECK: Compiling entry function 'fa_sm90_0' for 'sm_90a'
// CHECK-NOT: warning
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: warning
// SPLIT-NOT: warning
// SPLIT: Compiling entry function 'fa_sm90_0_combine' for 'sm_90a'
// SPLIT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SPLIT: Compiling entry function 'fa_sm90_0' for 'sm_90a'
// SPLIT-NOT: warning
// SPLIT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SPLIT-NOT: warning
// APPEND-NOT: warning
// APPEND: Compiling entry function 'fa_sm90_0_append' for 'sm_90a'
// APPEND: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// APPEND: Compiling entry function 'fa_sm90_0' for 'sm_90a'
// APPEND-NOT: warning
// APPEND: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// APPEND-NOT: warning
// KVHEADS-NOT: warning
// KVHEADS: Compiling entry function 'fa_sm90_0' for 'sm_90a'
// KVHEADS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// KVHEADS-NOT: warning
// TWINS-NOT: warning
// TWINS: Compiling entry function 'fa_sm90_0_combine' for 'sm_90a'
// TWINS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// TWINS: Compiling entry function 'fa_sm90_0_dense_packed' for 'sm_90a'
// TWINS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// TWINS: Compiling entry function 'fa_sm90_0_dense' for 'sm_90a'
// TWINS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// TWINS: Compiling entry function 'fa_sm90_0_packed' for 'sm_90a'
// TWINS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// TWINS: Compiling entry function 'fa_sm90_0' for 'sm_90a'
// TWINS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// TWINS-NOT: warning
