// RUN: fa-opt %s --flashattn-plan --flashattn-split-kv --flashattn-tile --split-input-file --verify-diagnostics | FileCheck %s

// Causal bottom-right (Sq = 100 < Sk = 130, GQA 4/2), lse: a loop over
// sequences, a work loop over tiles (head, m_block), views of this sequence
// and head, tile_init of the carried state (row max, row sum, accumulator)
// and the Q tile before the loop over the key blocks flashattn.key_blocks
// gives for rows [m0, m1) (Sk = 130, Sk - Sq = 30); log2(e)/sqrt(64) folded
// into tile_qk; the causal and sequence-end mask only under scf.if on
// boundary blocks (from block floor(key_end(first row) / block_n) on, a
// bound above the loop) as a tile_map over the whole tile, each row's keys
// j < key_end(row).
// CHECK-LABEL: func.func @causal
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// CHECK:     %[[M0:.*]] = arith.muli %{{.*}}, %c64
// CHECK:     %[[QV:[a-z0-9_]+]] = memref.subview %arg0[%[[B]], 0, %{{.*}}, 0] [1, 100, 1, 64]
// CHECK:     %[[OV:[a-z0-9_]+]] = memref.subview %arg3[%[[B]], %[[M0]], %{{.*}}, 0] [1, %[[ROWS:[a-z0-9_]+]], 1, 64]
// CHECK:     %[[LV:[a-z0-9_]+]] = memref.subview %arg4[%[[B]], %{{.*}}, %[[M0]]] [1, 1, %[[ROWS]]]
// CHECK:     %[[M1:.*]] = arith.addi %[[M0]], %[[ROWS]]
// CHECK:     %[[NB0:.*]], %[[NB1:.*]] = flashattn.key_blocks rows[%[[M0]], %[[M1]]) keys %c130 offset %c30 {block_n = 64 : i64, causal = #flashattn.causal<bottom_right>} : index
// CHECK:     %[[END0:.*]] = flashattn.key_end row %[[M0]] keys %c130 offset %c30 {causal = #flashattn.causal<bottom_right>} : index
// CHECK:     %[[FROM:.*]] = arith.floordivsi %[[END0]], %c64
// CHECK:     flashattn.tile_init %[[M:[a-z0-9_]+]], %{{.*}}, %[[ACC:[a-z0-9_]+]] :
// CHECK:     flashattn.tile_load %[[QV]][%[[M0]]] rows %[[ROWS]] into %[[QT:[a-z0-9_]+]] :
// CHECK:     scf.for %[[KB:.*]] = %[[NB0]] to %[[NB1]] step
// CHECK:       %[[N0:.*]] = arith.muli %[[KB]], %c64
// CHECK:       flashattn.tile_load %{{.*}} rows %{{.*}} into %[[KT:[a-z0-9_]+]] :
// CHECK:       flashattn.tile_qk %[[QT]], %[[KT]] into %[[ST:[a-z0-9_]+]] {scale = 0.180336878 : f32}
// CHECK:       %[[BOUNDARY:.*]] = arith.cmpi sge, %[[KB]], %[[FROM]]
// CHECK:       scf.if %[[BOUNDARY]] {
// CHECK:         flashattn.tile_map %[[ST]] rows %c64 cols %c64 {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[TI:.*]]: index, %[[TJ:.*]]: index):
// CHECK-NEXT:      %[[I:.*]] = arith.addi %[[M0]], %[[TI]] : index
// CHECK-NEXT:      %[[END:.*]] = flashattn.key_end row %[[I]] keys %c130 offset %c30
// CHECK-NEXT:      %[[J:.*]] = arith.addi %[[N0]], %[[TJ]] : index
// CHECK-NEXT:      %[[OK:.*]] = arith.cmpi slt, %[[J]], %[[END]]
// CHECK-NEXT:      %[[Y:.*]] = arith.select %[[OK]], %[[X]], %{{.*}} : f32
// CHECK-NEXT:      flashattn.yield %[[Y]] : f32
// CHECK:       flashattn.tile_softmax %[[ST]], %[[M]], %{{.*}}, %[[ACC]]
// CHECK-NEXT:  flashattn.tile_load %{{.*}} into %[[VT:[a-z0-9_]+]] :
// CHECK-NEXT:  flashattn.tile_pv %[[ST]], %[[VT]] into %[[ACC]]
// CHECK:     }
// CHECK:     flashattn.tile_store %[[ACC]], %[[M]], %{{.*}} into %[[OV]] rows %[[ROWS]] lse %[[LV]]
// CHECK: memref.dealloc %[[ST]]
func.func @causal(%q: memref<1x100x4x64xf16>, %k: memref<1x130x2x64xf16>, %v: memref<1x130x2x64xf16>,
                  %o: memref<1x100x4x64xf16>, %l: memref<1x4x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x100x4x64xf16>, memref<1x130x2x64xf16>, memref<1x130x2x64xf16>)
      outs(%o, %l : memref<1x100x4x64xf16>, memref<1x4x100xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// Softcap and a score region act on the scores: the scale is not folded
// (tile_qk scale = 1/sqrt(64)); a tile_map over the real rows and
// columns applies softcap (tanh), the region inlined with in-sequence
// indices (m0 + i, n0 + j), then * log2(e), kept finite where the score is
// (clamped to +-FLT_MAX unless the score is infinite). No causal mask: no scf.if for it
// beyond the sequence end.
// CHECK-LABEL: func.func @softcap_score
// CHECK: flashattn.tile_qk %{{.*}} {scale = 1.250000e-01 : f32}
// CHECK-NEXT: flashattn.tile_map %{{.*}} rows %{{.*}} cols %{{.*}} {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %[[I:.*]]: index, %[[J:.*]]: index):
// CHECK-NEXT:     %[[JA:[a-z0-9_]+]] = arith.addi %{{.*}}, %[[J]] : index
// CHECK-NEXT:     %[[X:[a-z0-9_]+]] = arith.divf %[[S]], %[[CAP:[a-z0-9_]+]] : f32
// CHECK-NEXT:     %[[TH:[a-z0-9_]+]] = math.tanh %[[X]] : f32
// CHECK-NEXT:     %[[SC:[a-z0-9_]+]] = arith.mulf %[[TH]], %[[CAP]] : f32
// CHECK-NEXT:     %[[D:[a-z0-9_]+]] = arith.subi %[[I]], %[[JA]] : index
// CHECK:          %[[R:[a-z0-9_]+]] = arith.addf %[[SC]], %{{.*}} : f32
// CHECK-NEXT:     %[[L2:[a-z0-9_]+]] = arith.mulf %[[R]], %{{.*}} : f32
// CHECK:          %[[LO:[a-z0-9_]+]] = arith.maximumf %[[L2]], %{{.*}} : f32
// CHECK-NEXT:     %[[HI:[a-z0-9_]+]] = arith.minimumf %[[LO]], %{{.*}} : f32
// CHECK-NEXT:     %[[ABS:[a-z0-9_]+]] = math.absf %[[R]] : f32
// CHECK-NEXT:     %[[INF:[a-z0-9_]+]] = arith.cmpf oeq, %[[ABS]], %{{.*}} : f32
// CHECK-NEXT:     %[[B2:[a-z0-9_]+]] = arith.select %[[INF]], %[[L2]], %[[HI]] : f32
// CHECK-NEXT:     flashattn.yield %[[B2]] : f32
// CHECK: scf.if
// CHECK: flashattn.key_end
// CHECK: flashattn.tile_softmax
func.func @softcap_score(%q: memref<1x60x2x64xf16>, %k: memref<1x90x2x64xf16>, %v: memref<1x90x2x64xf16>,
                         %o: memref<1x60x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x60x2x64xf16>, memref<1x90x2x64xf16>, memref<1x90x2x64xf16>)
      outs(%o : memref<1x60x2x64xf16>) {softcap = 30.0 : f32}
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %d = arith.subi %i, %j : index
        %di = arith.index_cast %d : index to i64
        %df = arith.sitofp %di : i64 to f32
        %r = arith.addf %s, %df : f32
        flashattn.yield %r : f32
      }
  return
}

// -----

// A mask region runs on every key block (after the boundary scf.if, not in
// it), on the real rows and columns, with values defined above the op.
// CHECK-LABEL: func.func @mask_region
// CHECK-SAME: %[[DOC:[a-z0-9_]+]]: memref<1x100xi32>
// CHECK: scf.if
// CHECK:   arith.select
// CHECK: flashattn.tile_map
// CHECK:          memref.load %[[DOC]]
// CHECK:          memref.load %[[DOC]]
// CHECK:          %[[KEEP:.*]] = arith.cmpi eq
// CHECK:          arith.select %[[KEEP]]
// CHECK: flashattn.tile_softmax
func.func @mask_region(%q: memref<1x100x2x64xf16>, %k: memref<1x100x2x64xf16>, %v: memref<1x100x2x64xf16>,
                       %doc: memref<1x100xi32>, %o: memref<1x100x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x100x2x64xf16>, memref<1x100x2x64xf16>, memref<1x100x2x64xf16>)
      outs(%o : memref<1x100x2x64xf16>)
      mask(%b: index, %h: index, %i: index, %j: index) {
        %di = memref.load %doc[%b, %i] : memref<1x100xi32>
        %dj = memref.load %doc[%b, %j] : memref<1x100xi32>
        %keep = arith.cmpi eq, %di, %dj : i32
        flashattn.yield %keep : i1
      }
  return
}

// -----

// Sliding window (L = 20): the key blocks carry the window; a block also
// needs the mask when it starts before the last row's window start (blocks
// below ceil(key_begin(last row) / block_n)), and a
// row sees key_begin(row) <= j < key_end(row).
// CHECK-LABEL: func.func @window
// CHECK: %[[NBLO:.*]], %{{.*}} = flashattn.key_blocks rows[{{.*}}) keys %c200 offset %c0 {block_n = 64 : i64, window_left = 20 : i64, window_right = 0 : i64} : index
// CHECK: %[[LAST:.*]] = arith.addi %{{.*}}, %c63
// CHECK: %[[BEGIN0:.*]] = flashattn.key_begin row %[[LAST]] offset %c0 {window_left = 20 : i64} : index
// CHECK: %[[UNTIL:.*]] = arith.ceildivsi %[[BEGIN0]], %c64
// CHECK: scf.for %[[KB:.*]] = %[[NBLO]] to
// CHECK:   %[[EARLY:.*]] = arith.cmpi slt, %[[KB]], %[[UNTIL]]
// CHECK:   %[[BOUNDARY:.*]] = arith.ori %{{.*}}, %[[EARLY]]
// CHECK:   scf.if %[[BOUNDARY]] {
// CHECK:     flashattn.key_end row %[[I:[a-z0-9_]+]] keys %c200 offset %c0 {window_right = 0 : i64}
// CHECK:     %[[BEGIN:.*]] = flashattn.key_begin row %[[I]] offset %c0 {window_left = 20 : i64}
// CHECK:       arith.cmpi sge, %{{.*}}, %[[BEGIN]]
func.func @window(%q: memref<1x200x2x64xf16>, %k: memref<1x200x2x64xf16>, %v: memref<1x200x2x64xf16>,
                  %o: memref<1x200x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x200x2x64xf16>, memref<1x200x2x64xf16>, memref<1x200x2x64xf16>)
      outs(%o : memref<1x200x2x64xf16>) {window_size = array<i64: 20, 0>}
  return
}

// -----

// Varlen q and k: per-sequence offsets and lengths from cu_seqlens; views
// start at the sequence's first packed row; lse is packed [heads, total_q].
// CHECK-LABEL: func.func @varlen
// CHECK: scf.for %[[B:[a-z0-9_]+]] = %c0 to %c2
// CHECK:   memref.load %arg3[%[[B]]] : memref<3xi32>
// CHECK:   %[[QOFF:[a-z0-9_]+]] = arith.index_cast %{{.*}} : i32 to index
// CHECK:   memref.load %arg4[%[[B]]] : memref<3xi32>
// CHECK:   %[[KOFF:[a-z0-9_]+]] = arith.index_cast
// CHECK:   scf.for
// CHECK:     memref.subview %arg0[%[[QOFF]], %{{.*}}, 0] [%{{.*}}, 1, 64]
// CHECK:     memref.subview %arg1[%[[KOFF]], %{{.*}}, 0] [%{{.*}}, 1, 64]
// CHECK:     memref.subview %arg6[%{{.*}}, %{{.*}}] [1, %{{.*}}] [1, 1] : memref<2x100xf32>
func.func @varlen(%q: memref<100x2x64xf16>, %k: memref<120x2x64xf16>, %v: memref<120x2x64xf16>,
                  %cq: memref<3xi32>, %ck: memref<3xi32>, %o: memref<100x2x64xf16>, %l: memref<2x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<100x2x64xf16>, memref<120x2x64xf16>, memref<120x2x64xf16>)
      cu_seqlens_q(%cq : memref<3xi32>) cu_seqlens_k(%ck : memref<3xi32>)
      outs(%o, %l : memref<100x2x64xf16>, memref<2x100xf32>)
  return
}

// -----

// Paged KV with split-KV (4 splits): Sk from seqused_k, K/V gathered through
// the sequence's block_table row, the work loop covers (head, m_block,
// split) and each split's key blocks are [s * per_split, (s + 1) * per_split)
// clipped to the causal range; partials go to the split's slice.
// CHECK-LABEL: func.func @paged_split
// CHECK: %[[PO:[a-z0-9_]+]] = memref.alloc() : memref<4x2x1x8x64xf32>
// CHECK: scf.for %[[B:[a-z0-9_]+]] =
// CHECK:   memref.load %arg3[%[[B]]] : memref<2xi32>
// CHECK:   scf.for %[[T:[a-z0-9_]+]] = %c0 to %c32
// CHECK:     %[[SPLIT:[a-z0-9_]+]] = arith.remui %[[T]], %c4
// CHECK:     %[[PAGES:[a-z0-9_]+]] = memref.subview %arg4[%[[B]], 0] [1, 16] [1, 1] : memref<2x16xi32> to memref<16xi32, strided<[1], offset: ?>>
// CHECK:     memref.subview %[[PO]][%[[SPLIT]], %[[B]],
// CHECK:     flashattn.key_blocks rows[{{.*}}) keys %{{.*}} offset %{{.*}} split %[[SPLIT]] of %c4 {block_n = 64 : i64, causal = #flashattn.causal<bottom_right>} : index
// CHECK:     scf.for
// CHECK:       flashattn.tile_load_paged %arg1[%[[PAGES]], %{{.*}}, %{{.*}}] rows %{{.*}} into
// CHECK: flashattn.combine
func.func @paged_split(%q: memref<2x1x8x64xf16>, %k: memref<64x16x2x64xf16>, %v: memref<64x16x2x64xf16>,
                       %su: memref<2xi32>, %bt: memref<2x16xi32>, %o: memref<2x1x8x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x1x8x64xf16>, memref<64x16x2x64xf16>, memref<64x16x2x64xf16>)
      seqused_k(%su : memref<2xi32>) block_table(%bt : memref<2x16xi32>)
      outs(%o : memref<2x1x8x64xf16>) {causal = #flashattn.causal<bottom_right>, num_splits = 4}
  return
}

// -----

// kv-cache append: a copy loop before the attention writes k_new/v_new rows at
// cache_seqlens[b] + r, guarded so that nothing is written past the cache;
// the attention then runs over cache_seqlens[b] + S_new keys.
// CHECK-LABEL: func.func @append
// CHECK: scf.for %[[B:[a-z0-9_]+]] = %c0 to %c2
// CHECK:   %[[START:[a-z0-9_]+]] = arith.index_cast
// CHECK:   scf.for %[[R:[a-z0-9_]+]] = %c0 to %c3
// CHECK:     %[[POS:[a-z0-9_]+]] = arith.addi %[[START]], %[[R]]
// CHECK-DAG: %[[LT:[a-z0-9_]+]] = arith.cmpi slt, %[[POS]], %c96
// CHECK-DAG: %[[GE:[a-z0-9_]+]] = arith.cmpi sge, %[[POS]], %c0
// CHECK:     %[[IN:[a-z0-9_]+]] = arith.andi %[[GE]], %[[LT]]
// CHECK:     scf.if %[[IN]] {
// CHECK:       memref.load %arg3
// CHECK:       memref.store %{{.*}}, %arg1[%[[B]], %[[POS]],
// CHECK: scf.for
// CHECK:   %[[C:[a-z0-9_]+]] = arith.index_cast
// CHECK:   %[[SK:[a-z0-9_]+]] = arith.addi %[[C]], %c3
// CHECK:   arith.minsi %[[SK]], %c96
func.func @append(%q: memref<2x3x4x64xf16>, %k: memref<2x96x2x64xf16>, %v: memref<2x96x2x64xf16>,
                  %kn: memref<2x3x2x64xf16>, %vn: memref<2x3x2x64xf16>, %cs: memref<2xi32>,
                  %o: memref<2x3x4x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xf16>, memref<2x96x2x64xf16>, memref<2x96x2x64xf16>)
      k_new(%kn : memref<2x3x2x64xf16>) v_new(%vn : memref<2x3x2x64xf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x3x4x64xf16>) {causal = #flashattn.causal<bottom_right>}
  return
}

// -----

// The tensor form is not tiled: it has to be bufferized first.
func.func @tensor(%q: tensor<1x8x2x64xf16>, %k: tensor<1x8x2x64xf16>, %v: tensor<1x8x2x64xf16>,
                  %o: tensor<1x8x2x64xf16>) -> tensor<1x8x2x64xf16> {
  // expected-error @+1 {{flashattn-tile: needs the memref form; bufferize first (one-shot-bufferize)}}
  %r = flashattn.attention ins(%q, %k, %v : tensor<1x8x2x64xf16>, tensor<1x8x2x64xf16>, tensor<1x8x2x64xf16>)
      outs(%o : tensor<1x8x2x64xf16>) -> tensor<1x8x2x64xf16>
  return %r : tensor<1x8x2x64xf16>
}

// -----

// Views without a unit stride in head_dim (e.g. from fully dynamic layouts
// at function boundaries) are rejected with the fix.
func.func @strided(%q: memref<1x8x2x64xf16, strided<[?, ?, ?, ?], offset: ?>>, %k: memref<1x8x2x64xf16>,
                   %v: memref<1x8x2x64xf16>, %o: memref<1x8x2x64xf16>) {
  // expected-error @+1 {{flashattn-tile: every operand needs a unit stride in its last dimension}}
  flashattn.attention ins(%q, %k, %v : memref<1x8x2x64xf16, strided<[?, ?, ?, ?], offset: ?>>, memref<1x8x2x64xf16>, memref<1x8x2x64xf16>)
      outs(%o : memref<1x8x2x64xf16>)
  return
}

// -----

// Statically empty extents (memref.subview takes no static offset into a
// dimension of size 0). No queries: nothing to write, the op goes away.
// CHECK-LABEL: func.func @no_queries
// CHECK-NOT: flashattn.
// CHECK: return
func.func @no_queries(%q: memref<2x0x2x64xf16>, %k: memref<2x7x2x64xf16>, %v: memref<2x7x2x64xf16>, %o: memref<2x0x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x0x2x64xf16>, memref<2x7x2x64xf16>, memref<2x7x2x64xf16>) outs(%o : memref<2x0x2x64xf16>)
  return
}

// -----

// No keys: every row is empty (out 0, lse -inf from tile_store's l = 0);
// no view of k or v and no key loop.
// CHECK-LABEL: func.func @no_keys
// CHECK: flashattn.tile_init
// CHECK: flashattn.tile_load
// CHECK-NOT: flashattn.tile_qk
// CHECK-NOT: flashattn.tile_pv
// CHECK: flashattn.tile_store
func.func @no_keys(%q: memref<2x5x2x64xf16>, %k: memref<2x0x2x64xf16>, %v: memref<2x0x2x64xf16>, %o: memref<2x5x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x5x2x64xf16>, memref<2x0x2x64xf16>, memref<2x0x2x64xf16>) outs(%o : memref<2x5x2x64xf16>)
  return
}

// -----

// head_dim 1 with one key: the views drop exactly the batch and head
// dimensions, not head_dim's unit dimension.
// CHECK-LABEL: func.func @unit_head_dim
// CHECK: memref.subview {{.*}} : memref<1x1x2x1xf16> to memref<1x1xf16, strided<[2, 1], offset: ?>>
func.func @unit_head_dim(%q: memref<1x64x2x1xf16>, %k: memref<1x1x2x1xf16>, %v: memref<1x1x2x1xf16>, %o: memref<1x64x2x1xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x1xf16>, memref<1x1x2x1xf16>, memref<1x1x2x1xf16>) outs(%o : memref<1x64x2x1xf16>)
  return
}

// -----

func.func @huge_head_dim(%q: memref<1x8x2x100000xf16>, %o: memref<1x8x2x100000xf16>) {
  // expected-error @+1 {{flashattn-tile: head_dim 100000 / head_dim_v 100000 exceeds the tiles' largest dimension, 65536}}
  flashattn.attention ins(%q, %q, %q : memref<1x8x2x100000xf16>, memref<1x8x2x100000xf16>, memref<1x8x2x100000xf16>) outs(%o : memref<1x8x2x100000xf16>)
  return
}

// -----

// A tile of query rows: positions are q_start + row (the key range's rows
// and each row's key end), the bottom-right offset is Sk - seqlen_q; the
// views and tile loads stay at the op's own rows (m0).
// CHECK-LABEL: func.func @row_tile
// CHECK-SAME: %[[START:[a-z0-9]+]]: index, %[[N:[a-z0-9]+]]: index)
// CHECK: %[[M0:.*]] = arith.muli %{{.*}}, %c64
// CHECK: %[[P0:.*]] = arith.addi %[[M0]], %[[START]] : index
// CHECK: %[[OFF:.*]] = arith.subi %c130, %[[N]] : index
// CHECK: flashattn.key_blocks rows[%[[P0]], %{{.*}}) keys %c130 offset %[[OFF]]
// CHECK: flashattn.key_end row %[[P0]] keys %c130 offset %[[OFF]]
// CHECK: flashattn.tile_load %{{.*}}[%[[M0]]] rows
func.func @row_tile(%q: memref<1x100x2x64xf16>, %k: memref<1x130x2x64xf16>, %v: memref<1x130x2x64xf16>,
                    %o: memref<1x100x2x64xf16>, %start: index, %n: index) {
  flashattn.attention ins(%q, %k, %v : memref<1x100x2x64xf16>, memref<1x130x2x64xf16>, memref<1x130x2x64xf16>)
      q_start(%start) seqlen_q(%n) outs(%o : memref<1x100x2x64xf16>) {causal = #flashattn.causal<bottom_right>}
  return
}
