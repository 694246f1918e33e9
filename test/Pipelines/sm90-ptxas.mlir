// REQUIRES: ptxas
// The generated kernels assemble for sm_90a with no register spills and no
// C75xx warnings (ptxas serializing wgmma), for head_dim 64, 128 and 256,
// the plans of every head_dim and mask.
// RUN: fa-compile --target sm90 --d 64 --dtype bf16 --causal bottom_right --lse --emit-ptx > %t64.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t64.ptx -o %t64.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --lse --emit-ptx > %t128.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t128.ptx -o %t128.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 256 --dtype f16 --causal top_left --emit-ptx > %t256.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t256.ptx -o %t256.cubin 2>&1 | FileCheck %s
// pack_gqa with automatic num_splits (the partial kernel and the combine)
// and a window with softcap (the 2-consumer head_dim 64 plan):
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --hq 32 --hkv 8 --causal bottom_right --pack-gqa 1 --num-splits 0 --emit-ptx > %tpack.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tpack.ptx -o %tpack.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 64 --dtype f16 --window-left 100 --window-right 50 --softcap 30 --lse --emit-ptx > %twin.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %twin.ptx -o %twin.cubin 2>&1 | FileCheck %s
// Varlen with seqused_k (the tile table) on the tightest plan (3
// consumers, head_dim 64), and varlen with pack_gqa:
// RUN: fa-compile --target sm90 --d 64 --dtype bf16 --varlen-q --varlen-k --seqused-k --lse --emit-ptx > %tvl.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tvl.ptx -o %tvl.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 128 --dtype f16 --hq 32 --hkv 8 --causal bottom_right --varlen-q --varlen-k --pack-gqa 1 --lse --emit-ptx > %tvlp.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tvlp.ptx -o %tvlp.cubin 2>&1 | FileCheck %s
// Paged KV by TMA boxes (pages of 16) and by per-row copies (pages of 1,
// the 40-register producer copying), with an append:
// RUN: fa-compile --target sm90 --d 128 --dtype bf16 --hq 32 --hkv 8 --causal bottom_right --seqused-k --page-size 16 --pack-gqa 1 --num-splits 0 --lse --emit-ptx > %tpg.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tpg.ptx -o %tpg.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --d 64 --dtype f16 --seqused-k --page-size 1 --append --lse --emit-ptx > %tpg1.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tpg1.ptx -o %tpg1.cubin 2>&1 | FileCheck %s
// Per-row copies at head_dim 256 (pages of 3, the plan's 32-key blocks):
// RUN: fa-compile --target sm90 --d 256 --dtype f16 --hq 4 --hkv 4 --causal bottom_right --seqused-k --page-size 3 --lse --emit-ptx > %tpg3.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tpg3.ptx -o %tpg3.cubin 2>&1 | FileCheck %s
// CHECK-NOT: warning
// CHECK: Compiling entry function 'fa_sm90_0' for 'sm_90a'
// CHECK-NOT: warning
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: warning
