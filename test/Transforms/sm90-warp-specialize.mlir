// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --split-input-file | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 warp-specialize=off" --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize="producer-regs=24 consumer-regs=240" --split-input-file | FileCheck %s --check-prefix=REGS
// RUN: not fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize="producer-regs=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize="consumer-regs=240" --split-input-file 2>&1 | FileCheck %s --check-prefix=BUDGET240

// Budgets past the launch's 168 x 384 registers would leave setmaxnreg.inc
// waiting forever: the producer keeping its 168, or consumers of 240 with
// a producer of 40.
// BUDGET: error: flashattn-sm90-warp-specialize: setmaxnreg budgets 0 x 128 + 232 x 256 = 80896 registers exceed the launch's 168 x 384
// BUDGET240: error: flashattn-sm90-warp-specialize: setmaxnreg budgets 40 x 128 + 240 x 256 = 66560 registers exceed the launch's 168 x 384

// The kernel body becomes a warp_specialize of two copies over the thread
// index, the scratch tiles staying above it. The producer keeps the loads
// (Q's made async) and the work and key-block loops they sit in; the
// consumers wait for Q where its load stood, release K after tile_qk, V
// after tile_pv and Q after the key-block loop, and keep no load.
// CHECK-LABEL: gpu.func @fa_sm90_0
// CHECK-DAG: %[[Q:.*]] = memref.alloca() : memref<128x64xf32>
// CHECK-DAG: %[[KR:.*]] = memref.alloca() : memref<2x128x64xf32>
// CHECK-DAG: %[[VR:.*]] = memref.alloca() : memref<2x128x64xf32>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[T32:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK: flashattn.warp_specialize %[[T32]] {consumer_regs = 232 : i32, producer_regs = 40 : i32} producer {
// CHECK:   scf.for
// CHECK-NOT: flashattn.tile_qk
// CHECK:     flashattn.tile_load async %{{.*}}[%{{.*}}] rows %{{.*}} into %[[Q]]
// CHECK-NOT: flashattn.tile_qk
// CHECK:     scf.for
// CHECK-NOT: flashattn.tile_wait
// CHECK:         flashattn.tile_load async %{{.*}} into %[[KS:.*]] :
// CHECK:         flashattn.tile_load async %{{.*}} into %[[VS:.*]] :
// CHECK-NOT: flashattn.tile_
// CHECK: } consumers {
// CHECK-NOT: flashattn.tile_load
// CHECK:   scf.for
// CHECK:     flashattn.tile_init
// CHECK:     flashattn.tile_wait %[[Q]] rows
// CHECK:     scf.for
// CHECK:       %[[K:.*]] = memref.subview %[[KR]]
// CHECK:       %[[V:.*]] = memref.subview %[[VR]]
// CHECK:       flashattn.tile_wait %[[K]] rows
// CHECK:       flashattn.tile_qk %[[Q]], %[[K]] into
// CHECK-NEXT:  flashattn.tile_release %[[K]]
// CHECK:       flashattn.tile_softmax
// CHECK:       flashattn.tile_wait %[[V]] rows
// CHECK:       flashattn.tile_pv %{{.*}}, %[[V]] into
// CHECK-NEXT:  flashattn.tile_release %[[V]]
// CHECK-NEXT: }
// CHECK-NEXT: flashattn.tile_release %[[Q]]
// CHECK-NEXT: flashattn.tile_store
// CHECK-NOT: flashattn.tile_load
// CHECK: gpu.return

// The plan's warp_specialize = false: the kernel stays as it is.
// OFF-LABEL: gpu.func @fa_sm90_0
// OFF-NOT: flashattn.warp_specialize
// OFF-NOT: flashattn.tile_release
// OFF: gpu.return

// REGS: flashattn.warp_specialize %{{.*}} {consumer_regs = 240 : i32, producer_regs = 24 : i32}
func.func @causal(%q: memref<2x100x4x64xbf16>, %k: memref<2x130x2x64xbf16>, %v: memref<2x130x2x64xbf16>,
                  %o: memref<2x100x4x64xbf16>, %l: memref<2x4x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x100x4x64xbf16>, memref<2x130x2x64xbf16>, memref<2x130x2x64xbf16>)
      outs(%o, %l : memref<2x100x4x64xbf16>, memref<2x4x100xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Paged K / V: the producer gathers through the page list; the consumers
// neither gather nor take the page list.
// CHECK-LABEL: gpu.func @fa_sm90_0
// CHECK: producer {
// CHECK:   %[[PAGES:.*]] = memref.subview %{{.*}} : memref<?xi32> to memref<?xi32, strided<[1], offset: ?>>
// CHECK:   flashattn.tile_load_paged async %{{.*}}[%[[PAGES]],
// CHECK: } consumers {
// CHECK-NOT: flashattn.tile_load_paged
// CHECK-NOT: memref<?xi32> to
// CHECK: flashattn.tile_wait
// CHECK: flashattn.tile_release
// CHECK: gpu.return
func.func @paged(%q: memref<2x1x4x128xbf16>, %k: memref<8x128x1x128xbf16>, %v: memref<8x128x1x128xbf16>,
                 %su: memref<2xi32>, %bt: memref<2x4xi32>, %o: memref<2x1x4x128xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x4x128xbf16>, memref<8x128x1x128xbf16>, memref<8x128x1x128xbf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x4xi32>)
      outs(%o : memref<2x1x4x128xbf16>)
  return
}

// -----

// head_dim 256 with softcap: flashattn-plan plans no producer (a
// consumer's O takes 128 of its registers, and ptxas spills at 232).
// CHECK-LABEL: gpu.func @fa_sm90_0
// CHECK-NOT: flashattn.warp_specialize
// CHECK: gpu.return
func.func @hd256_softcap(%q: memref<1x200x2x256xbf16>, %k: memref<1x200x2x256xbf16>, %v: memref<1x200x2x256xbf16>,
                         %o: memref<1x200x2x256xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x200x2x256xbf16>, memref<1x200x2x256xbf16>, memref<1x200x2x256xbf16>)
      outs(%o : memref<1x200x2x256xbf16>) {softcap = 30.0 : f32}
  return
}

// -----

// head_dim 256 without softcap: a producer.
// CHECK-LABEL: gpu.func @fa_sm90_0
// CHECK: flashattn.warp_specialize
func.func @hd256(%q: memref<1x200x2x256xbf16>, %k: memref<1x200x2x256xbf16>, %v: memref<1x200x2x256xbf16>,
                 %o: memref<1x200x2x256xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x200x2x256xbf16>, memref<1x200x2x256xbf16>, memref<1x200x2x256xbf16>)
      outs(%o : memref<1x200x2x256xbf16>)
  return
}
