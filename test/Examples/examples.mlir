// Every model example under examples/ parses, verifies and prints.
// RUN: fa-opt %examples/llama3-8b-prefill.mlir | FileCheck %s --check-prefix=LLAMA
// RUN: fa-opt %examples/mistral-7b-sliding-window.mlir | FileCheck %s --check-prefix=MISTRAL
// RUN: fa-opt %examples/gemma2-9b-softcap.mlir | FileCheck %s --check-prefix=GEMMA
// RUN: fa-opt %examples/packed-varlen-batch.mlir | FileCheck %s --check-prefix=VARLEN
// RUN: fa-opt %examples/paged-decode-split-kv.mlir | FileCheck %s --check-prefix=PAGED

// LLAMA: flashattn.attention {{.*}}tensor<1x512x32x128xbf16>, tensor<1x512x8x128xbf16>{{.*}}causal = #flashattn.causal<bottom_right>
// MISTRAL: flashattn.attention {{.*}}window_size = array<i64: 255, 0>
// GEMMA: flashattn.attention {{.*}}softcap = 5.000000e+01 : f32{{.*}}window_size = array<i64: 127, 0>
// VARLEN: flashattn.attention {{.*}}cu_seqlens_q({{.*}} : memref<5xi32>) cu_seqlens_k({{.*}} : memref<5xi32>)
// PAGED: flashattn.attention {{.*}}block_table({{.*}} : memref<8x64xi32>){{.*}}num_splits = 4 : i64
