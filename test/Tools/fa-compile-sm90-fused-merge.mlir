// REQUIRES: ptxas
// fa-compile's automatic fused_merge: the split-KV partial kernels
// merge the splits themselves (the artifact's metadata says
// "fused_combine"), also pack_gqa over pages of 16 keys with 4 kv heads a
// key block (the decode kernel), except where the merge's code makes the
// partial kernel spill registers (that kernel with a score region, at the
// consumers' 232 registers): that artifact is compiled again without it
// and the combine kernel merges. Asked for explicitly, the spilling kernel
// is an error. (This depends on ptxas's register allocation: a ptxas that
// fits the kernel makes the last two runs fail.)
// RUN: fa-compile --target sm90 --lse --d 128 --dtype bf16 --causal bottom_right --hq 32 --hkv 8 --num-splits 0 --pack-gqa 1 -o %t.dense.faa
// RUN: grep -a -o '"fused_combine":[a-z]*' %t.dense.faa | FileCheck %s --check-prefix=FUSED
// RUN: fa-compile --target sm90 --lse --d 128 --dtype bf16 --causal bottom_right --hq 32 --hkv 8 --num-splits 0 --pack-gqa 1 --seqused-k --page-size 16 -o %t.g16.faa
// RUN: grep -a -o '"fused_combine":[a-z]*' %t.g16.faa | FileCheck %s --check-prefix=FUSED
// RUN: fa-compile --target sm90 --lse --d 128 --dtype bf16 --causal bottom_right --hq 32 --hkv 8 --num-splits 0 --pack-gqa 1 --seqused-k --page-size 16 --regions-file %S/../gpu/regions/bias.regions -o %t.bias.faa
// RUN: not grep -a -q '"fused_combine"' %t.bias.faa
// RUN: not fa-compile --target sm90 --fused-merge on --lse --d 128 --dtype bf16 --causal bottom_right --hq 32 --hkv 8 --num-splits 0 --pack-gqa 1 --seqused-k --page-size 16 --regions-file %S/../gpu/regions/bias.regions -o %t.on.faa 2>&1 | FileCheck %s --check-prefix=ON
// FUSED: "fused_combine":true
// ON: the sm90 kernel fa_sm90_0 spills registers
