// Inputs from .npy files (xtensor's xnpy): fa-run writes a case's seeded
// inputs with --dump-inputs, and a run with another seed that reads them back
// with --inputs gets exactly the same errors; a file of the wrong shape is bad
// input.
// RUN: rm -rf %t && mkdir -p %t
// RUN: fa-run %s --seed 3 --dump-inputs %t/in | grep PASS | awk '{print $1, $(NF-6), $(NF-5)}' > %t/dumped
// RUN: fa-run %s --seed 11 --inputs %t/in | grep PASS | awk '{print $1, $(NF-6), $(NF-5)}' > %t/read
// RUN: fa-run %s --seed 11 | grep PASS | awk '{print $1, $(NF-6), $(NF-5)}' > %t/other
// RUN: diff %t/dumped %t/read
// RUN: not diff %t/dumped %t/other
// RUN: ls %t/in/gqa_varlen | FileCheck %s --check-prefix=FILES
// RUN: cp %t/in/gqa_varlen/k.npy %t/in/gqa_varlen/q.npy
// RUN: not fa-run %s --inputs %t/in | FileCheck %s --check-prefix=BAD

// FILES: cu_seqlens_k.npy
// FILES: cu_seqlens_q.npy
// FILES: k.npy
// FILES: q.npy
// FILES: v.npy
// BAD: gqa_varlen {{.*}} BAD INPUT: {{.*}}q.npy has shape 90x2x64, the argument 'q' is 60x4x64

func.func @gqa_varlen(%q: memref<60x4x64xf32>, %k: memref<90x2x64xf32>, %v: memref<90x2x64xf32>,
                      %cq: memref<3xi32>, %ck: memref<3xi32>, %o: memref<60x4x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<60x4x64xf32>, memref<90x2x64xf32>, memref<90x2x64xf32>)
      cu_seqlens_q(%cq : memref<3xi32>) cu_seqlens_k(%ck : memref<3xi32>)
      outs(%o : memref<60x4x64xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
