// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1 warp-specialize=off" --flashattn-tile --flashattn-sm90-pipeline-kv --split-input-file | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1 warp-specialize=off" --flashattn-tile --flashattn-sm90-pipeline-kv="stages=3" --split-input-file | FileCheck %s --check-prefix=S3
// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1 warp-specialize=off stages=1" --flashattn-tile --flashattn-sm90-pipeline-kv --split-input-file | FileCheck %s --check-prefix=ONE
// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1 warp-specialize=off" --flashattn-tile --flashattn-sm90-pipeline-kv="v-lag=1" --split-input-file | FileCheck %s --check-prefix=LAG
// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --split-input-file | FileCheck %s --check-prefix=LAG

// The plan's 2 stages: K and V in rings of 2 tiles; block begin starts
// before the loop (when the loop runs), iteration n starts block n + 1 (when
// below the end) into slot (n + 1 - begin) mod 2, with its row and rows
// recomputed at n + 1, then waits for its own slot (n - begin) mod 2: K
// before tile_qk, V where its load stood (after the softmax). Q is loaded
// once per tile, as before.
// CHECK-LABEL: func.func @causal
// CHECK: gpu.func @fa_sm90_0
// CHECK-DAG: %[[KR:.*]] = memref.alloca() : memref<2x64x64xf32>
// CHECK-DAG: %[[VR:.*]] = memref.alloca() : memref<2x64x64xf32>
// CHECK: %[[KV:.*]] = memref.subview %arg1
// CHECK: %[[VV:.*]] = memref.subview %arg2
// CHECK: %[[B:.*]], %[[E:.*]] = flashattn.key_blocks
// CHECK: flashattn.tile_load %{{.*}} into %[[QT:[a-z0-9_]+]] :
// CHECK: %[[FIRST:.*]] = arith.cmpi slt, %[[B]], %[[E]]
// CHECK: scf.if %[[FIRST]] {
// CHECK:   %[[R0:.*]] = arith.muli %[[B]], %c64
// CHECK:   %[[K0:.*]] = memref.subview %[[KR]][%c0, 0, 0] [1, 64, 64] [1, 1, 1]
// CHECK:   flashattn.tile_load async %[[KV]][%[[R0]]] rows %{{.*}} into %[[K0]]
// CHECK:   %[[V0:.*]] = memref.subview %[[VR]][%c0, 0, 0] [1, 64, 64] [1, 1, 1]
// CHECK:   flashattn.tile_load async %[[VV]][%[[R0]]] rows %{{.*}} into %[[V0]]
// CHECK: }
// CHECK: scf.for %[[N:.*]] = %[[B]] to %[[E]] step %c1 {
// CHECK:   %[[REL:.*]] = arith.subi %[[N]], %[[B]]
// CHECK:   %[[SLOT:.*]] = arith.remsi %[[REL]], %[[C2:.*]] :
// CHECK:   %[[REL1:.*]] = arith.addi %[[REL]], %[[C1:.*]] :
// CHECK:   %[[NEXT:.*]] = arith.remsi %[[REL1]], %[[C2]]
// CHECK:   %[[AHEAD:.*]] = arith.addi %[[N]], %[[C1]]
// CHECK:   %[[BELOW:.*]] = arith.cmpi slt, %[[AHEAD]], %[[E]]
// CHECK:   scf.if %[[BELOW]] {
// CHECK:     %[[R1:.*]] = arith.muli %[[AHEAD]], %c64
// CHECK:     %[[K1:.*]] = memref.subview %[[KR]][%[[NEXT]], 0, 0]
// CHECK:     flashattn.tile_load async %[[KV]][%[[R1]]] rows %{{.*}} into %[[K1]]
// CHECK:     %[[V1:.*]] = memref.subview %[[VR]][%[[NEXT]], 0, 0]
// CHECK:     flashattn.tile_load async %[[VV]][%[[R1]]] rows %{{.*}} into %[[V1]]
// CHECK:   }
// CHECK:   %[[KS:.*]] = memref.subview %[[KR]][%[[SLOT]], 0, 0]
// CHECK:   %[[VS:.*]] = memref.subview %[[VR]][%[[SLOT]], 0, 0]
// CHECK:   %[[ROW:.*]] = arith.muli %[[N]], %c64
// CHECK:   %[[LEFT:.*]] = arith.subi %c130, %[[ROW]]
// CHECK:   %[[ROWS:.*]] = arith.minsi %[[LEFT]], %c64
// CHECK:   flashattn.tile_wait %[[KS]] rows %[[ROWS]]
// CHECK:   flashattn.tile_qk %[[QT]], %[[KS]] into
// CHECK:   flashattn.tile_softmax
// CHECK:   flashattn.tile_wait %[[VS]] rows %[[ROWS]]
// CHECK:   flashattn.tile_pv %{{.*}}, %[[VS]] into
// CHECK-NOT: flashattn.tile_load
// CHECK: }
// CHECK: flashattn.tile_store

// Three stages: blocks begin and begin + 1 start before the loop, block
// n + 2 in the loop, into slot (n + 2 - begin) mod 3.
// S3-LABEL: func.func @causal
// S3: memref.alloca() : memref<3x64x64xf32>
// S3: scf.if
// S3: flashattn.tile_load async
// S3: %[[CONE:c1[_0-9]*]] = arith.constant 1 : index
// S3: %[[B1:.*]] = arith.addi %begin, %[[CONE]]
// S3: %[[IN:.*]] = arith.cmpi slt, %[[B1]]
// S3: scf.if %[[IN]] {
// S3: memref.subview %{{.*}}[%[[CONE]], 0, 0]
// S3: scf.for %[[N:.*]] = %begin
// S3: arith.remsi %{{.*}}, %c3
// S3: %[[AHEAD:.*]] = arith.addi %[[N]], %{{c2[_0-9]*}}
// S3: arith.cmpi slt, %[[AHEAD]]

// V a block behind K (v-lag=1; the plan's under intra_wg_overlap with
// warp_specialize, as flashattn-plan decides here): only K's block
// begin starts before the loop; iteration n starts K of block n + 1 (when
// below the end), then V of block n, unguarded, into V's slot of block n
// (n - begin) mod 2, which the wait before tile_pv then reads.
// LAG-LABEL: func.func @causal
// LAG: %[[KR:.*]] = memref.alloca() : memref<2x
// LAG: %[[VR:.*]] = memref.alloca() : memref<2x
// LAG: %[[FIRST:.*]] = arith.cmpi slt, %begin, %end
// LAG: scf.if %[[FIRST]] {
// LAG:   memref.subview %[[KR]]
// LAG-NEXT: flashattn.tile_load async
// LAG-NOT: flashattn.tile_load
// LAG: }
// LAG: scf.for %[[N:.*]] = %begin to %end
// LAG:   %[[REL:.*]] = arith.subi %[[N]], %begin
// LAG:   %[[SLOT:.*]] = arith.remsi %[[REL]], %{{.*}} :
// LAG:   %[[AHEAD:.*]] = arith.addi %[[N]], %{{.*}} :
// LAG:   %[[BELOW:.*]] = arith.cmpi slt, %[[AHEAD]], %end
// LAG:   scf.if %[[BELOW]] {
// LAG:     memref.subview %[[KR]]
// LAG-NEXT: flashattn.tile_load async
// LAG-NOT: flashattn.tile_load
// LAG:   }
// LAG:   %[[ROW:.*]] = arith.muli %[[N]], %c
// LAG:   %[[VN:.*]] = memref.subview %[[VR]][%[[SLOT]], 0, 0]
// LAG-NEXT: flashattn.tile_load async %{{.*}}[%[[ROW]]] rows %{{.*}} into %[[VN]]
// LAG:   %[[VS:.*]] = memref.subview %[[VR]][%[[SLOT]], 0, 0]
// LAG:   flashattn.tile_qk
// LAG:   flashattn.tile_wait %[[VS]]
// LAG:   flashattn.tile_pv %{{.*}}, %[[VS]] into

// With one stage nothing changes.
// ONE-LABEL: func.func @causal
// ONE-NOT: tile_wait
// ONE-NOT: async
// ONE: flashattn.tile_store
func.func @causal(%q: memref<2x100x4x64xbf16>, %k: memref<2x130x2x64xbf16>, %v: memref<2x130x2x64xbf16>,
                  %o: memref<2x100x4x64xbf16>, %l: memref<2x4x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x100x4x64xbf16>, memref<2x130x2x64xbf16>, memref<2x130x2x64xbf16>)
      outs(%o, %l : memref<2x100x4x64xbf16>, memref<2x4x100xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Paged K / V: the gathers start ahead the same way, through the same
// page list and kv head.
// CHECK-LABEL: func.func @paged
// CHECK: scf.for
// CHECK:   scf.if
// CHECK:     flashattn.tile_load_paged async %arg1[%[[PAGES:.*]], %[[HEAD:.*]], %{{.*}}] rows
// CHECK:     flashattn.tile_load_paged async %arg2[%[[PAGES]], %[[HEAD]], %{{.*}}] rows
// CHECK:   flashattn.tile_wait
// CHECK:   flashattn.tile_qk
// CHECK:   flashattn.tile_wait
// CHECK:   flashattn.tile_pv
func.func @paged(%q: memref<2x8x4x64xf16>, %kc: memref<16x64x2x64xf16>, %vc: memref<16x64x2x64xf16>,
                 %bt: memref<2x8xi32>, %su: memref<2xi32>, %o: memref<2x8x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x8x4x64xf16>, memref<16x64x2x64xf16>, memref<16x64x2x64xf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      outs(%o : memref<2x8x4x64xf16>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Pages of 4 keys: a key block gathers more than 8 pages, and V then
// starts with K, ahead of its read by stages - 1 blocks (a V a block
// behind would keep twice the page boxes in flight).
// LAG-LABEL: func.func @small_pages
// LAG: scf.if
// LAG:   flashattn.tile_load_paged async %arg1
// LAG-NOT: }
// LAG:   flashattn.tile_load_paged async %arg2
// LAG: }
// LAG: scf.for
// LAG:   scf.if
// LAG:     flashattn.tile_load_paged async %arg1
// LAG-NOT: }
// LAG:     flashattn.tile_load_paged async %arg2
// LAG:   }
// LAG-NOT: flashattn.tile_load_paged
// LAG:   flashattn.tile_pv
func.func @small_pages(%q: memref<2x8x4x64xf16>, %kc: memref<64x4x2x64xf16>, %vc: memref<64x4x2x64xf16>,
                       %bt: memref<2x32xi32>, %su: memref<2xi32>, %o: memref<2x8x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x8x4x64xf16>, memref<64x4x2x64xf16>, memref<64x4x2x64xf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x32xi32>)
      outs(%o : memref<2x8x4x64xf16>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// A load whose rows come from an op with effects (a memref.load in the
// loop) cannot be recomputed a block ahead: the loop is left as it is.
// S3-LABEL: gpu.func @effects
// S3-NOT: async
// S3: flashattn.tile_load %arg0[%{{.*}}] rows %[[R:.*]] into
// S3-NOT: async
// S3: gpu.return
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @effects(%k: memref<128x64xbf16>, %rows: memref<2xindex>, %q: memref<64x64xf32>,
                      %s: memref<64x64xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %kt = memref.alloca() : memref<64x64xf32>
      scf.for %n = %c0 to %c2 step %c1 {
        %r = memref.load %rows[%n] : memref<2xindex>
        %row = arith.muli %n, %c64 : index
        flashattn.tile_load %k[%row] rows %r into %kt : memref<128x64xbf16> into memref<64x64xf32>
        flashattn.tile_qk %q, %kt into %s {scale = 1.0 : f32} : memref<64x64xf32>, memref<64x64xf32> into memref<64x64xf32>
      }
      gpu.return
    }
  }
}

// -----

// A tile two loads write, and rows carried by the loop, are left as they
// are (neither is known a block ahead).
// S3-LABEL: gpu.func @not_ahead
// S3-NOT: async
// S3: gpu.return
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @not_ahead(%k: memref<256x64xbf16>, %q: memref<64x64xf32>, %s: memref<64x64xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %kt = memref.alloca() : memref<64x64xf32>
      %vt = memref.alloca() : memref<64x64xf32>
      scf.for %n = %c0 to %c2 step %c1 {
        %row = arith.muli %n, %c64 : index
        flashattn.tile_load %k[%row] rows %c64 into %kt : memref<256x64xbf16> into memref<64x64xf32>
        flashattn.tile_qk %q, %kt into %s {scale = 1.0 : f32} : memref<64x64xf32>, memref<64x64xf32> into memref<64x64xf32>
        %row2 = arith.addi %row, %c64 : index
        flashattn.tile_load %k[%row2] rows %c64 into %kt : memref<256x64xbf16> into memref<64x64xf32>
        flashattn.tile_qk %q, %kt into %s {scale = 1.0 : f32} : memref<64x64xf32>, memref<64x64xf32> into memref<64x64xf32>
      }
      %r = scf.for %n = %c0 to %c2 step %c1 iter_args(%rows = %c64) -> (index) {
        %row = arith.muli %n, %c64 : index
        flashattn.tile_load %k[%row] rows %rows into %vt : memref<256x64xbf16> into memref<64x64xf32>
        flashattn.tile_qk %q, %vt into %s {scale = 1.0 : f32} : memref<64x64xf32>, memref<64x64xf32> into memref<64x64xf32>
        scf.yield %rows : index
      }
      gpu.return
    }
  }
}
