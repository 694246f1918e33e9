// REQUIRES: ptxas
// The warpgroup form (fa-compile --unpipelined: flashattn-tile's kernel
// distributed by flashattn-sm90-warpgroup over one warpgroup, without
// flashattn-sm90-pipeline-kv and flashattn-sm90-warp-specialize) assembles
// for sm_90a with no spills and no C75xx warnings: head_dim 64, 128 and
// 256, a window with softcap, varlen with seqused_k, paged with pack_gqa
// over pages of 16 keys, and split-KV (the partial kernel and the
// combine); GQA and pack_gqa runs check the packed twin too.
// RUN: fa-compile --target sm90 --unpipelined --d 64 --dtype bf16 --causal bottom_right --lse --emit-ptx > %t64.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t64.ptx -o %t64.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --unpipelined --d 128 --dtype f16 --hq 8 --hkv 2 --lse --emit-ptx > %t128.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t128.ptx -o %t128.cubin 2>&1 | FileCheck %s --check-prefix=PACKED
// RUN: fa-compile --target sm90 --unpipelined --d 256 --dtype bf16 --window-left 100 --window-right 0 --softcap 30 --emit-ptx > %t256.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %t256.ptx -o %t256.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --unpipelined --d 128 --dtype bf16 --varlen-q --varlen-k --seqused-k --lse --emit-ptx > %tvl.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tvl.ptx -o %tvl.cubin 2>&1 | FileCheck %s
// RUN: fa-compile --target sm90 --unpipelined --d 128 --dtype bf16 --hq 32 --hkv 8 --causal bottom_right --seqused-k --page-size 16 --lse --emit-ptx > %tpg.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tpg.ptx -o %tpg.cubin 2>&1 | FileCheck %s --check-prefix=PACKED
// RUN: fa-compile --target sm90 --unpipelined --d 64 --dtype f16 --num-splits 3 --lse --emit-ptx > %tsp.ptx
// RUN: %ptxas -arch=sm_90a -O3 -v %tsp.ptx -o %tsp.cubin 2>&1 | FileCheck %s --check-prefix=SPLIT
// Pages that need row copies (here 1 key) are refused with the reason:
// RUN: not fa-compile --target sm90 --unpipelined --d 64 --dtype f16 --seqused-k --page-size 1 --lse --emit-ptx 2>&1 | FileCheck %s --check-prefix=ROWS
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
// PACKED-NOT: warning
// PACKED: Compiling entry function 'fa_sm90_0_packed' for 'sm_90a'
// PACKED: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PACKED: Compiling entry function 'fa_sm90_0' for 'sm_90a'
// PACKED-NOT: warning
// PACKED: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PACKED-NOT: warning
// ROWS: fa-compile: the flashattn-sm90-pipeline failed: flashattn-sm90-warpgroup: pages of a multiple of the key block (64) or of 8 keys dividing it, or the plan's kv_row_copies with a producer warpgroup, got 'memref<?x1x1x64xf16>'
