// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1" --flashattn-split-kv --flashattn-tile --split-input-file --verify-diagnostics | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1" --flashattn-split-kv --flashattn-tile="dense-entry packed-entry" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=TWINS
// RUN: fa-opt %s --flashattn-plan="target=sm90 block-m=64 block-n=64 consumers=1 descending-key-blocks=on" --flashattn-split-kv --flashattn-tile --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=DESC

// On sm90 the tiled loops form a kernel for one CTA: the op stays, naming
// it; the kernel takes q, k, v, out and lse, and its persistent work loop
// runs from gpu.block_id by gpu.grid_dim over B * Hq * ceil(Sq / 64) = 2 * 4
// * 2 tiles. The causal plan's lpt schedule decodes them longest first: in
// groups of 8 (batch, head)s (all of them: their K / V fit L2), m_block = 1
// - round, (batch, head) fastest. The tile body is the host's: key_blocks,
// tile ops, the softcap tile_map on every block and the causal tile_map on
// boundary blocks only.
// CHECK-LABEL: func.func @causal
// CHECK: flashattn.attention
// CHECK-SAME: flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0>
// CHECK: gpu.module @fa_sm90_0_module {
// CHECK: gpu.func @fa_sm90_0(%[[Q:[a-z0-9_]+]]: memref<2x100x4x64xbf16> {flashattn.arg = "q"}, %{{[a-z0-9_]+}}: memref<2x130x2x64xbf16> {flashattn.arg = "k"}, %{{[a-z0-9_]+}}: memref<2x130x2x64xbf16> {flashattn.arg = "v"}, %{{[a-z0-9_]+}}: memref<2x100x4x64xbf16> {flashattn.arg = "out"}, %{{[a-z0-9_]+}}: memref<2x4x100xf32> {flashattn.arg = "lse"}) kernel {
// CHECK-DAG: %[[CAP:.*]] = arith.constant 3.000000e+01 : f32
// CHECK-DAG: %[[ST:.*]] = memref.alloca() : memref<64x64xf32>
// CHECK: %[[FIRST:.*]] = gpu.block_id x
// CHECK: %[[GRID:.*]] = gpu.grid_dim x
// CHECK: scf.for %[[T:.*]] = %[[FIRST]] to %c16 step %[[GRID]] {
// CHECK:   %[[GFIRST:.*]] = arith.muli %{{.*}}, %c8
// CHECK:   %[[IN:.*]] = arith.remui %[[T]], %c16
// CHECK:   %[[HERE:.*]] = arith.minsi %{{.*}}, %c8
// CHECK:   %[[BH:.*]] = arith.addi %[[GFIRST]], %{{.*}}
// CHECK:   %[[ROUND:.*]] = arith.divui %[[IN]], %[[HERE]]
// CHECK:   %[[B:.*]] = arith.divui %[[BH]], %c4
// CHECK:   %[[MB:.*]] = arith.subi %c1, %[[ROUND]]
// CHECK:   %[[M0:.*]] = arith.muli %[[MB]], %c64
// CHECK:   memref.subview %[[Q]][%[[B]], 0, %{{.*}}, 0] [1, 100, 1, 64]
// CHECK:   flashattn.key_blocks rows[%[[M0]], %{{.*}}) keys %c130 offset %c30
// CHECK:   flashattn.tile_load
// CHECK:   scf.for
// CHECK:     flashattn.tile_qk %{{.*}} into %[[S:.*]] {scale = 1.250000e-01 : f32}
// CHECK:     flashattn.tile_map %[[S]] rows %{{.*}} cols %{{.*}} {
// CHECK:       arith.divf %{{.*}}, %[[CAP]]
// CHECK:       math.tanh
// CHECK:     scf.if
// CHECK:       flashattn.tile_map %[[S]] rows %c64 cols %c64 {
// CHECK:         flashattn.key_end
// CHECK:     flashattn.tile_softmax %[[S]]
// CHECK:     flashattn.tile_pv %[[S]]
// CHECK:   flashattn.tile_store %{{.*}} into %{{.*}} rows %{{.*}} lse %{{.*}}
// CHECK: gpu.return
// With the plan's descending_key_blocks the loop counts j over the same
// [begin, end) and computes block top - j (top = begin + end - 1): its K
// and V at (top - j) * 64 keys, its boundary mask from floor(key_end(m0) /
// 64) on, the masked blocks first.
// DESC-LABEL: func.func @causal
// DESC: %[[BEGIN:[a-z0-9_]+]], %[[END:[a-z0-9_]+]] = flashattn.key_blocks rows[%[[M0:[a-z0-9_]+]],
// DESC: %[[E0:.*]] = flashattn.key_end row %[[M0]]
// DESC: %[[FROM:.*]] = arith.floordivsi %[[E0]], %c64
// DESC: %[[SUM:.*]] = arith.addi %[[BEGIN]], %[[END]]
// DESC-NEXT: %[[TOP:.*]] = arith.subi %[[SUM]], %c1
// DESC: scf.for %[[J:.*]] = %[[BEGIN]] to %[[END]] step %c1 {
// DESC-NEXT: %[[N:.*]] = arith.subi %[[TOP]], %[[J]]
// DESC-NEXT: %[[N0:.*]] = arith.muli %[[N]], %c64
// DESC: flashattn.tile_load %{{.*}}[%[[N0]]]
// DESC: %[[MASKED:.*]] = arith.cmpi sge, %[[N]], %[[FROM]]
// DESC-NEXT: scf.if %[[MASKED]]
func.func @causal(%q: memref<2x100x4x64xbf16>, %k: memref<2x130x2x64xbf16>, %v: memref<2x130x2x64xbf16>,
                  %o: memref<2x100x4x64xbf16>, %l: memref<2x4x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x100x4x64xbf16>, memref<2x130x2x64xbf16>, memref<2x130x2x64xbf16>)
      outs(%o, %l : memref<2x100x4x64xbf16>, memref<2x4x100xf32>) {causal = #flashattn.causal<bottom_right>, softcap = 30.0 : f32}
  return
}

// -----

// A constant that folding hoisted out of a score region is cloned into the
// kernel (the gpu.module is isolated from above).
// CHECK-LABEL: func.func @region_constant
// CHECK: gpu.func @fa_sm90_0
// CHECK: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: flashattn.tile_map
// CHECK:   arith.mulf %{{.*}}, %[[TWO]] : f32
func.func @region_constant(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                           %o: memref<1x64x2x64xf16>) {
  %two = arith.constant 2.0 : f32
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x2x64xf16>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %r = arith.mulf %s, %two : f32
        flashattn.yield %r : f32
      }
  return
}

// -----

// Varlen: the kernel also takes the runtime's tile table (i32 words: a
// header of 8, then 8 an entry) and runs over entries x heads, in groups of
// the header's word 2 heads, entry by entry, head fastest; each tile's
// sequence comes from its entry: q position (field 0), q length (2), k
// position (3), k length (5), m_block (6); the views start at the
// positions.
// CHECK-LABEL: func.func @varlen
// CHECK: gpu.func @fa_sm90_0({{.*}}, %[[TABLE:[a-z0-9_]+]]: memref<?xi32> {flashattn.arg = "tile_table"}) kernel {
// CHECK: %[[E:.*]] = memref.load %[[TABLE]][%c0]
// CHECK: %[[EI:.*]] = arith.index_cast %[[E]]
// CHECK: %[[TOTAL:.*]] = arith.muli %[[EI]], %c2
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[TOTAL]] step
// CHECK:   memref.load %[[TABLE]][%c2]
// CHECK:   arith.divui %[[T]], %{{.*}}
// CHECK:   %[[IN:.*]] = arith.remui %[[T]], %{{.*}}
// CHECK:   %[[ENTRY:.*]] = arith.divui %[[IN]], %{{.*}}
// CHECK:   %[[W0:.*]] = arith.muli %[[ENTRY]], %c8
// CHECK:   %[[F0:.*]] = arith.addi %[[W0]], %c8
// CHECK:   %[[QPOS:.*]] = memref.load %[[TABLE]][%[[F0]]]
// CHECK:   arith.addi %{{.*}}, %c14
// CHECK:   memref.subview %arg0[%{{.*}}, %{{.*}}, 0] [%{{.*}}, 1, 64]
// CHECK:   flashattn.key_blocks
// CHECK:   flashattn.tile_store
func.func @varlen(%q: memref<100x2x64xf16>, %k: memref<100x2x64xf16>, %v: memref<100x2x64xf16>,
                  %cq: memref<3xi32>, %ck: memref<3xi32>, %o: memref<100x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<100x2x64xf16>, memref<100x2x64xf16>, memref<100x2x64xf16>)
      cu_seqlens_q(%cq : memref<3xi32>) cu_seqlens_k(%ck : memref<3xi32>)
      outs(%o : memref<100x2x64xf16>)
  return
}

// -----

// Paged: the kernel also takes the page lists; a tile's list starts at its
// entry's k position (field 3) and holds ceil(k length / page size) pages;
// K and V come through tile_load_paged.
// CHECK-LABEL: func.func @paged
// CHECK: gpu.func @fa_sm90_0({{.*}}, %[[TABLE:[a-z0-9_]+]]: memref<?xi32> {flashattn.arg = "tile_table"}, %[[PAGES:[a-z0-9_]+]]: memref<?xi32> {flashattn.arg = "page_table"}) kernel {
// CHECK:   %[[A3:.*]] = arith.addi %{{.*}}, %c11 : index
// CHECK:   %[[L3:.*]] = memref.load %[[TABLE]][%[[A3]]]
// CHECK:   %[[KPOS:.*]] = arith.index_cast %[[L3]] : i32 to index
// CHECK:   %[[A5:.*]] = arith.addi %{{.*}}, %c13 : index
// CHECK:   %[[L5:.*]] = memref.load %[[TABLE]][%[[A5]]]
// CHECK:   %[[KLEN:.*]] = arith.index_cast %[[L5]] : i32 to index
// CHECK:   %[[N:.*]] = arith.ceildivsi %[[KLEN]], %c64
// CHECK:   %[[LIST:.*]] = memref.subview %[[PAGES]][%[[KPOS]]] [%[[N]]] [1]
// CHECK:   flashattn.tile_load_paged %arg1[%[[LIST]], %{{.*}}, %{{.*}}] rows
// CHECK:   flashattn.tile_load_paged %arg2[%[[LIST]], %{{.*}}, %{{.*}}] rows
func.func @paged(%q: memref<2x1x4x64xf16>, %kc: memref<16x64x2x64xf16>, %vc: memref<16x64x2x64xf16>,
                 %bt: memref<2x8xi32>, %used: memref<2xi32>, %o: memref<2x1x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<16x64x2x64xf16>, memref<16x64x2x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      outs(%o : memref<2x1x4x64xf16>)
  return
}

// -----

// kv-cache append: the kernel attends over the cache after the append
// (each tile's key length from the table); it writes no cache row itself.
// The copy kernel, launched before it, writes one 16-byte chunk of k_new
// and of v_new a thread (B * S_new * Hkv * D / 8 = 2 * 1 * 2 * 8 chunks:
// chunk c, kv head g, batch b; S_new = 1 folds r to 0) at position
// cache_seqlens[b] + r: the table's word 1 says where the sequences'
// (cache_seqlens, page list) pairs start.
// CHECK-LABEL: func.func @append
// CHECK: flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0, append = @fa_sm90_0_module::@fa_sm90_0_append>
// CHECK: gpu.func @fa_sm90_0({{.*}}memref<?xi32> {flashattn.arg = "tile_table"}) kernel {
// CHECK-NOT: memref.store
// CHECK: gpu.return
// CHECK: gpu.func @fa_sm90_0_append(%[[KN:.*]]: memref<2x1x2x64xf16> {flashattn.arg = "k_new"}, %[[VN:.*]]: memref<2x1x2x64xf16> {flashattn.arg = "v_new"}, %[[KC:.*]]: memref<2x256x2x64xf16> {flashattn.arg = "k"}, %[[VC:.*]]: memref<2x256x2x64xf16> {flashattn.arg = "v"}, %[[TABLE:.*]]: memref<?xi32> {flashattn.arg = "tile_table"}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK:   %[[W1:.*]] = memref.load %[[TABLE]][%c1]
// CHECK:   %[[PAIRS:.*]] = arith.index_cast %[[W1]] : i32 to index
// CHECK:   scf.for %[[E:.*]] = %{{.*}} to %c32 step
// CHECK:     %[[C:.*]] = arith.remui %[[E]], %c8
// CHECK:     %[[REST:.*]] = arith.divui %[[E]], %c8
// CHECK:     %[[G:.*]] = arith.remui %[[REST]], %c2
// CHECK:     %[[B:.*]] = arith.divui %[[REST]], %c2
// CHECK:     %[[COL:.*]] = arith.muli %[[C]], %c8
// CHECK:     %[[TWOB:.*]] = arith.muli %[[B]], %c2
// CHECK:     %[[PAIR:.*]] = arith.addi %[[PAIRS]], %[[TWOB]]
// CHECK:     %[[START:.*]] = memref.load %[[TABLE]][%[[PAIR]]]
// CHECK:     %[[POS:.*]] = arith.index_cast %[[START]] : i32 to index
// CHECK:     %[[X:.*]] = vector.load %[[KN]][%[[B]], %c0, %[[G]], %[[COL]]] {alignment = 16 : i64} : memref<2x1x2x64xf16>, vector<8xf16>
// CHECK:     vector.store %[[X]], %[[KC]][%[[B]], %[[POS]], %[[G]], %[[COL]]] {alignment = 16 : i64}
// CHECK:     %[[Y:.*]] = vector.load %[[VN]][%[[B]], %c0, %[[G]], %[[COL]]]
// CHECK:     vector.store %[[Y]], %[[VC]][%[[B]], %[[POS]], %[[G]], %[[COL]]]
func.func @append(%q: memref<2x1x4x64xf16>, %kc: memref<2x256x2x64xf16>, %vc: memref<2x256x2x64xf16>,
                  %kn: memref<2x1x2x64xf16>, %vn: memref<2x1x2x64xf16>, %cs: memref<2xi32>,
                  %o: memref<2x1x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<2x256x2x64xf16>, memref<2x256x2x64xf16>)
      k_new(%kn : memref<2x1x2x64xf16>) v_new(%vn : memref<2x1x2x64xf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x1x4x64xf16>)
  return
}

// -----

// pack_gqa: the G = 4 query heads of a kv head share a tile's rows (row r:
// position r / 4 of head r % 4). The tiles go over B * Hkv * ceil(Sq * 4 /
// 64) = 2 * 2 * 7; Q is the [Sq, 4, D] view of the kv head's query heads
// (4 h), loaded from packed row m0; the key blocks and the first row's key
// end are those of positions [m0 / 4, (m0 + rows) / 4); the mask takes
// each row's position (m0 + i) / 4; out and lse are the packed [rows / 4,
// 4, D] and [4, rows / 4] views.
// CHECK-LABEL: func.func @packed
// CHECK: gpu.func @fa_sm90_0
// CHECK: scf.for %{{.*}} = %{{.*}} to %c28 step
// CHECK:   %[[B:.*]] = arith.divui %{{.*}}, %c2 : index
// CHECK:   %[[M0:.*]] = arith.muli %{{.*}}, %c64
// CHECK:   %[[ROWS:.*]] = arith.minsi %{{.*}}, %c64
// CHECK:   %[[P0:.*]] = arith.divsi %[[M0]], %c4
// CHECK:   %[[QH:.*]] = arith.muli %[[H:.*]], %c4
// CHECK:   %[[QV:.*]] = memref.subview %arg0[%[[B]], 0, %[[QH]], 0] [1, 100, 4, 64]
// CHECK:   memref.subview %arg1[%[[B]], 0, %[[H]], 0] [1, 130, 1, 64]
// CHECK:   %[[OV:.*]] = memref.subview %arg3[%[[B]], %[[P0]], %[[QH]], 0] [1, %[[NP:.*]], 4, 64]
// CHECK:   %[[LV:.*]] = memref.subview %arg4[%[[B]], %[[QH]], %[[P0]]] [1, 4, %[[NP]]]
// CHECK:   %[[END:.*]] = arith.addi %[[M0]], %[[ROWS]]
// CHECK:   %[[P1:.*]] = arith.divsi %[[END]], %c4
// CHECK:   flashattn.key_blocks rows[%[[P0]], %[[P1]]) keys %c130
// CHECK:   flashattn.key_end row %[[P0]]
// CHECK:   flashattn.tile_load %[[QV]][%[[M0]]] rows %[[ROWS]] into {{.*}} : memref<100x4x64xbf16, strided<[512, 64, 1], offset: ?>>
// CHECK:   scf.for
// CHECK:     flashattn.tile_map
// CHECK:       %[[R:.*]] = arith.addi %[[M0]], %{{.*}}
// CHECK:       %[[POS:.*]] = arith.divsi %[[R]], %c4
// CHECK:       flashattn.key_end row %[[POS]]
// CHECK:   flashattn.tile_store {{.*}} into %[[OV]] rows %[[ROWS]] lse %[[LV]] : {{.*}} into memref<?x4x64xbf16, strided<[512, 64, 1], offset: ?>>, memref<4x?xf32, strided<[100, 1], offset: ?>>
func.func @packed(%q: memref<2x100x8x64xbf16>, %k: memref<2x130x2x64xbf16>, %v: memref<2x130x2x64xbf16>,
                  %o: memref<2x100x8x64xbf16>, %l: memref<2x8x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x100x8x64xbf16>, memref<2x130x2x64xbf16>, memref<2x130x2x64xbf16>)
      outs(%o, %l : memref<2x100x8x64xbf16>, memref<2x8x100xf32>) {causal = #flashattn.causal<bottom_right>, pack_gqa = true}
  return
}

// -----

// A score region sees each packed row's query head, 4 h + r % 4.
// CHECK-LABEL: func.func @packed_region
// CHECK: flashattn.tile_map
// CHECK:   ^bb0(%{{.*}}: f32, %[[I:.*]]: index, %{{.*}}: index):
// CHECK:   %[[G:.*]] = arith.muli %{{.*}}, %c4
// CHECK:   %[[IN:.*]] = arith.remsi %[[I]], %c4
// CHECK:   %[[HEAD:.*]] = arith.addi %[[G]], %[[IN]]
// CHECK:   arith.index_cast %[[HEAD]]
func.func @packed_region(%q: memref<1x64x8x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                         %o: memref<1x64x8x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x8x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x8x64xf16>) {pack_gqa = true}
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %hi = arith.index_cast %h : index to i64
        %hf = arith.sitofp %hi : i64 to f32
        %r = arith.subf %s, %hf : f32
        flashattn.yield %r : f32
      }
  return
}

// -----

// The twins the runtime may launch instead (dense-entry, packed-entry): the
// split-KV partial form's kernel over B * Hq * ceil(Sq / 64) * splits
// tiles, its pack_gqa twin over B * Hkv * ceil(Sq * 2 / 64) * splits, the
// dense kernel (no splits) writing the combine's bf16 out and lse, and
// its packed twin; the op names the kernel, the dense entry and 2 heads a
// packed group.
// TWINS-LABEL: func.func @twins
// TWINS: flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0, dense = @fa_sm90_0_module::@fa_sm90_0_dense, combine = @fa_sm90_0_module::@fa_sm90_0_combine, packed_groups = 2>
// TWINS: gpu.func @fa_sm90_0({{.*}}%{{.*}}: memref<?x2x100x4x64xf32> {flashattn.arg = "out"}
// TWINS:   flashattn.key_blocks {{.*}} split
// TWINS:   flashattn.tile_store {{.*}} into memref<?x64xf32, {{.*}}>, memref<?xf32, {{.*}}>
// TWINS: gpu.func @fa_sm90_0_packed({{.*}}%{{.*}}: memref<?x2x100x4x64xf32> {flashattn.arg = "out"}
// TWINS:   flashattn.key_blocks {{.*}} split
// TWINS:   flashattn.tile_store {{.*}} into memref<?x2x64xf32, {{.*}}>, memref<2x?xf32, {{.*}}>
// TWINS: gpu.func @fa_sm90_0_dense({{.*}}%{{.*}}: memref<2x100x4x64xbf16> {flashattn.arg = "out"}, %{{.*}}: memref<2x4x100xf32> {flashattn.arg = "lse"})
// TWINS-NOT: split
// TWINS:   flashattn.tile_store {{.*}} into memref<?x64xbf16, {{.*}}>, memref<?xf32, {{.*}}>
// TWINS: gpu.func @fa_sm90_0_dense_packed(
// TWINS:   flashattn.tile_store {{.*}} into memref<?x2x64xbf16, {{.*}}>, memref<2x?xf32, {{.*}}>
func.func @twins(%q: memref<2x100x4x64xbf16>, %k: memref<2x300x2x64xbf16>, %v: memref<2x300x2x64xbf16>,
                 %o: memref<2x100x4x64xbf16>, %l: memref<2x4x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x100x4x64xbf16>, memref<2x300x2x64xbf16>, memref<2x300x2x64xbf16>)
      outs(%o, %l : memref<2x100x4x64xbf16>, memref<2x4x100xf32>) {num_splits = 2 : i64}
  return
}

// -----

// kv_heads_per_block (the plan's 4 for pack_gqa over pages of 16 keys): a
// tile serves a group of 4 kv heads (its head h of the table's Hkv / 4 =
// 2, kv heads from 4 h), each key block holds 64 / 4 = 16 keys of each,
// heads fastest (tile_load_paged heads = 4), columns j are key n0 + j / 4
// of kv head j % 4, and on every block row i (query head i % 8 of the
// group, G = 2 a kv head) keeps only its kv head's columns: (i % 8) / 2
// == j % 4. The _kv1 twin keeps one kv head a block.
// CHECK-LABEL: func.func @kv_heads
// CHECK: flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0, kv_heads_per_block = 4>
// CHECK: gpu.func @fa_sm90_0(
// CHECK:   %[[TOTAL:.*]] = arith.muli %{{.*}}, %c2 : index
// CHECK:   scf.for %{{.*}} = %block_id_x to %[[TOTAL]] step
// CHECK:   %[[H:.*]] = arith.addi
// CHECK:   %[[KVH:.*]] = arith.muli %[[H]], %c4 : index
// CHECK:   flashattn.key_blocks {{.*}} {block_n = 16 : i64}
// CHECK:   flashattn.tile_load_paged %arg1[%{{.*}}, %[[KVH]], %{{.*}}] rows %{{.*}} into %{{.*}} {heads = 4 : i64}
// CHECK:   flashattn.tile_map %{{.*}} rows %c64 cols %c64 {
// CHECK:   ^bb0(%{{.*}}: f32, %[[I:.*]]: index, %[[J:.*]]: index):
// CHECK:     %[[IN:.*]] = arith.remui %[[I]], %c8
// CHECK:     %[[ROWKV:.*]] = arith.divui %[[IN]], %c2
// CHECK:     %[[COLKV:.*]] = arith.remui %[[J]], %c4
// CHECK:     %[[SAME:.*]] = arith.cmpi eq, %[[ROWKV]], %[[COLKV]]
// CHECK:     arith.select %[[SAME]]
// CHECK: gpu.func @fa_sm90_0_kv1(
// CHECK:   flashattn.key_blocks {{.*}} {block_n = 64 : i64}
// CHECK-NOT: heads = 4
// CHECK: gpu.return
func.func @kv_heads(%q: memref<2x1x16x64xf16>, %kc: memref<64x16x8x64xf16>, %vc: memref<64x16x8x64xf16>,
                    %bt: memref<2x32xi32>, %used: memref<2xi32>, %o: memref<2x1x16x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x16x64xf16>, memref<64x16x8x64xf16>, memref<64x16x8x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x32xi32>)
      outs(%o : memref<2x1x16x64xf16>) {pack_gqa = true}
  return
}

// -----

// A plan's kv_heads_per_block without pack_gqa is reported (flashattn-plan
// keeps a plan the op already has).
func.func @kv_heads_unpacked(%q: memref<2x1x4x64xf16>, %kc: memref<16x16x2x64xf16>, %vc: memref<16x16x2x64xf16>,
                             %bt: memref<2x8xi32>, %used: memref<2xi32>, %o: memref<2x1x4x64xf16>) {
  // expected-error @+1 {{flashattn-tile: the sm90 kernel does not take kv_heads_per_block = 2 (only with pack_gqa over paged KV by TMA, dividing Hkv = 2 and block_n, and Hq / Hkv times it dividing block_m) yet}}
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<16x16x2x64xf16>, memref<16x16x2x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      outs(%o : memref<2x1x4x64xf16>) {plan = #flashattn.plan<target = sm90, block_m = 64, block_n = 64, stages = 2, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false, sm90 = <kv_heads_per_block = 2>>}
  return
}

// -----

// What the sm90 kernels do not take yet is reported: a region reading a
// table defined outside it (it would need a kernel argument),
func.func @region_reads_table(%q: memref<1x64x2x64xf16>, %k: memref<1x64x2x64xf16>, %v: memref<1x64x2x64xf16>,
                              %o: memref<1x64x2x64xf16>, %doc: memref<64xi32>) {
  // expected-error @+1 {{flashattn-tile: the sm90 kernel does not take score / mask regions that use values from outside them (other than constants) yet}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xf16>, memref<1x64x2x64xf16>, memref<1x64x2x64xf16>)
      outs(%o : memref<1x64x2x64xf16>)
      mask(%b: index, %h: index, %i: index, %j: index) {
        %di = memref.load %doc[%i] : memref<64xi32>
        %dj = memref.load %doc[%j] : memref<64xi32>
        %keep = arith.cmpi eq, %di, %dj : i32
        flashattn.yield %keep : i1
      }
  return
}

// -----

// ALiBi (the host path's only, so far)
func.func @alibi(%q: memref<1x64x2x64xbf16>, %k: memref<1x64x2x64xbf16>, %v: memref<1x64x2x64xbf16>,
                 %o: memref<1x64x2x64xbf16>, %slopes: memref<2xf32>) {
  // expected-error @+1 {{flashattn-tile: the sm90 kernel does not take ALiBi yet}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)
      alibi_slopes(%slopes : memref<2xf32>) outs(%o : memref<1x64x2x64xbf16>)
  return
}

// -----

// a tile of query rows (the op's q_start, from upstream tiling),
func.func @row_tile(%q: memref<1x64x2x64xbf16>, %k: memref<1x64x2x64xbf16>, %v: memref<1x64x2x64xbf16>,
                    %o: memref<1x64x2x64xbf16>, %start: index, %n: index) {
  // expected-error @+1 {{flashattn-tile: the sm90 kernel does not take a tile of query rows (q_start) yet}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)
      q_start(%start) seqlen_q(%n) outs(%o : memref<1x64x2x64xbf16>)
  return
}

// -----

// and pack_gqa whose group does not divide block_m (Q's tensor map boxes
// G heads x block_m / G positions).
func.func @pack_gqa_group(%q: memref<1x8x6x64xbf16>, %k: memref<1x64x1x64xbf16>, %v: memref<1x64x1x64xbf16>,
                          %o: memref<1x8x6x64xbf16>) {
  // expected-error @+1 {{flashattn-tile: the sm90 kernel does not take pack_gqa with Hq / Hkv = 6 not dividing block_m = 64 yet}}
  flashattn.attention ins(%q, %k, %v : memref<1x8x6x64xbf16>, memref<1x64x1x64xbf16>, memref<1x64x1x64xbf16>)
      outs(%o : memref<1x8x6x64xbf16>) {pack_gqa = true}
  return
}

// -----

// Split-KV: the flashattn.combine reading the partial results gets the
// merge kernel, which it names: one thread per element e = ((b * Sq + i) *
// H + h) * D + d of out, over the views the runtime launches it with
// (partial_out [S, B, Sq, H, D], partial_lse [S, B, H, Sq]); each merges
// the splits' element (flashattn.merge_splits), writes it in out's type
// and, at column 0, the row's lse.
// CHECK-LABEL: func.func @combine
// CHECK: flashattn.attention {{.*}}combine = @fa_sm90_0_module::@fa_sm90_0_combine
// CHECK: flashattn.combine
// CHECK-SAME: flashattn.sm90 = #flashattn.sm90_entries<kernel = @fa_sm90_0_module::@fa_sm90_0_combine>
// CHECK: gpu.func @fa_sm90_0_combine(%[[PO:.*]]: memref<?x?x?x4x64xf32> {flashattn.arg = "partial_out"}, %[[PL:.*]]: memref<?x?x4x?xf32> {flashattn.arg = "partial_lse"}, %[[OUT:.*]]: memref<?x?x4x64xbf16> {flashattn.arg = "out"}, %[[LSE:.*]]: memref<?x4x?xf32> {flashattn.arg = "lse"}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK:   %[[B:.*]] = memref.dim %[[OUT]], %c0
// CHECK:   %[[SQ:.*]] = memref.dim %[[OUT]], %c1
// CHECK:   %[[BS:.*]] = arith.muli %[[B]], %[[SQ]]
// CHECK:   %[[BSH:.*]] = arith.muli %[[BS]], %c4
// CHECK:   %[[TOTAL:.*]] = arith.muli %[[BSH]], %c64
// CHECK:   %[[BID:.*]] = gpu.block_id x
// CHECK:   %[[FIRST0:.*]] = arith.muli %[[BID]], %c128
// CHECK:   %[[FIRST:.*]] = arith.addi %[[FIRST0]], %{{.*}}
// CHECK:   %[[GRID:.*]] = gpu.grid_dim x
// CHECK:   %[[STRIDE:.*]] = arith.muli %[[GRID]], %c128
// CHECK:   scf.for %[[E:.*]] = %[[FIRST]] to %[[TOTAL]] step %[[STRIDE]] {
// CHECK:     %[[D:.*]] = arith.remui %[[E]], %c64
// CHECK:     %[[R:.*]] = arith.divui %[[E]], %c64
// CHECK:     %[[H:.*]] = arith.remui %[[R]], %c4
// CHECK:     %[[BI:.*]] = arith.divui %[[R]], %c4
// CHECK:     %[[I:.*]] = arith.remui %[[BI]], %[[SQ]]
// CHECK:     %[[BB:.*]] = arith.divui %[[BI]], %[[SQ]]
// CHECK:     %[[V:.*]], %[[L:.*]] = flashattn.merge_splits %[[PO]][%[[BB]], %[[I]], %[[H]], %[[D]]], %[[PL]][%[[BB]], %[[H]], %[[I]]]
// CHECK:     %[[T:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK:     memref.store %[[T]], %[[OUT]][%[[BB]], %[[I]], %[[H]], %[[D]]]
// CHECK:     %[[COL0:.*]] = arith.cmpi eq, %[[D]], %c0
// CHECK:     scf.if %[[COL0]] {
// CHECK:       memref.store %[[L]], %[[LSE]][%[[BB]], %[[H]], %[[I]]]
func.func @combine(%q: memref<?x?x4x64xbf16>, %k: memref<?x?x2x64xbf16>, %v: memref<?x?x2x64xbf16>,
                   %o: memref<?x?x4x64xbf16>, %l: memref<?x4x?xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<?x?x4x64xbf16>, memref<?x?x2x64xbf16>, memref<?x?x2x64xbf16>)
      outs(%o, %l : memref<?x?x4x64xbf16>, memref<?x4x?xf32>) {num_splits = 3 : i64}
  return
}

// -----

// Varlen split-KV: the combine kernel sees out [Tq, H, D] as a batch of
// one, [1, Tq, H, D], as the runtime launches it (lse [1, H, Tq]).
// CHECK-LABEL: func.func @combine_varlen
// CHECK: gpu.func @fa_sm90_0_combine(%{{.*}}: memref<?x1x?x4x64xf32> {flashattn.arg = "partial_out"}, %{{.*}}: memref<?x1x4x?xf32> {flashattn.arg = "partial_lse"}, %{{.*}}: memref<1x?x4x64xbf16> {flashattn.arg = "out"}, %{{.*}}: memref<1x4x?xf32> {flashattn.arg = "lse"})
func.func @combine_varlen(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>,
                          %cq: memref<3xi32>, %ck: memref<3xi32>,
                          %o: memref<?x4x64xbf16>, %l: memref<4x?xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<?x4x64xbf16>, memref<?x2x64xbf16>, memref<?x2x64xbf16>)
      cu_seqlens_q(%cq : memref<3xi32>) cu_seqlens_k(%ck : memref<3xi32>)
      outs(%o, %l : memref<?x4x64xbf16>, memref<4x?xf32>) {num_splits = 3 : i64}
  return
}

// -----

// Paged append (k_new's kv heads and head dim left to the launch): the
// chunk count comes from k_new's dims, a chunk's page from the sequence's
// page list (the table's second word of its pair, then pos / page_size),
// and a page outside the pool (16 pages) is not written.
// CHECK-LABEL: func.func @paged_append
// CHECK: gpu.func @fa_sm90_0_append(%[[KN:.*]]: memref<2x1x?x?xf16> {flashattn.arg = "k_new"}, %{{.*}}: memref<2x1x?x?xf16> {flashattn.arg = "v_new"}, %[[KC:.*]]: memref<16x16x2x64xf16> {flashattn.arg = "k"}, %{{.*}}: memref<16x16x2x64xf16> {flashattn.arg = "v"}, %[[TABLE:.*]]: memref<?xi32> {flashattn.arg = "tile_table"}, %[[PAGES:.*]]: memref<?xi32> {flashattn.arg = "page_table"})
// CHECK:   %[[H:.*]] = memref.dim %[[KN]], %c2
// CHECK:   %[[D:.*]] = memref.dim %[[KN]], %c3
// CHECK:   %[[CHUNKS:.*]] = arith.divui %[[D]], %c8
// CHECK:   scf.for %[[E:.*]] =
// CHECK:     %[[PAIR:.*]] = arith.addi
// CHECK:     %[[START:.*]] = memref.load %[[TABLE]][%[[PAIR]]]
// CHECK:     %[[POS:.*]] = arith.index_cast %[[START]]
// CHECK:     %[[AT:.*]] = arith.addi %[[PAIR]], %c1
// CHECK:     %[[LW:.*]] = memref.load %[[TABLE]][%[[AT]]]
// CHECK:     %[[LIST:.*]] = arith.index_cast %[[LW]]
// CHECK:     %[[SLOT:.*]] = arith.divui %[[POS]], %c16
// CHECK:     %[[ENTRY:.*]] = arith.addi %[[LIST]], %[[SLOT]]
// CHECK:     %[[PW:.*]] = memref.load %[[PAGES]][%[[ENTRY]]]
// CHECK:     %[[PAGE:.*]] = arith.index_cast %[[PW]]
// CHECK:     %[[IN:.*]] = arith.cmpi ult, %[[PAGE]], %c16
// CHECK:     scf.if %[[IN]] {
// CHECK:       %[[ROW:.*]] = arith.remui %[[POS]], %c16
// CHECK:       %[[X:.*]] = vector.load %[[KN]]
// CHECK:       vector.store %[[X]], %[[KC]][%[[PAGE]], %[[ROW]],
func.func @paged_append(%q: memref<2x1x4x64xf16>, %kc: memref<16x16x2x64xf16>, %vc: memref<16x16x2x64xf16>,
                        %bt: memref<2x8xi32>, %used: memref<2xi32>,
                        %kn: memref<2x1x?x?xf16>, %vn: memref<2x1x?x?xf16>, %cs: memref<2xi32>,
                        %o: memref<2x1x4x64xf16>) {
  flashattn.attention ins(%q, %kc, %vc : memref<2x1x4x64xf16>, memref<16x16x2x64xf16>, memref<16x16x2x64xf16>)
      seqused_k(%used : memref<2xi32>) block_table(%bt : memref<2x8xi32>)
      k_new(%kn : memref<2x1x?x?xf16>) v_new(%vn : memref<2x1x?x?xf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x1x4x64xf16>)
  return
}
