// RUN: fa-opt %s --convert-flashattn-to-vector --cse --split-input-file | FileCheck %s
// RUN: fa-opt %s --convert-flashattn-to-vector=vector-bits=512 --cse --split-input-file | FileCheck %s --check-prefix=AVX512

// tile_load: rows [0, rows) read as vectors of head_dim elements, extended to
// f32; rows [rows, T) zeroed.
// CHECK-LABEL: func.func @load
// CHECK: scf.for %[[R:[a-z0-9_]+]] = %c0 to %arg2 step
// CHECK:   %[[ROW:[a-z0-9_]+]] = arith.addi %arg1, %[[R]]
// CHECK:   %[[V:[a-z0-9_]+]] = vector.load %arg0[%[[ROW]], %c0] : memref<?x64xbf16, strided<[128, 1], offset: ?>>, vector<64xbf16>
// CHECK:   %[[E:[a-z0-9_]+]] = arith.extf %[[V]] : vector<64xbf16> to vector<64xf32>
// CHECK:   vector.store %[[E]], %arg3[%[[R]], %c0]
// CHECK: scf.for %[[Z:[a-z0-9_]+]] = %arg2 to %c32 step
// CHECK:   vector.store %cst, %arg3[%[[Z]], %c0] : memref<32x64xf32>, vector<64xf32>
func.func @load(%src: memref<?x64xbf16, strided<[128, 1], offset: ?>>, %row0: index, %rows: index, %t: memref<32x64xf32>) {
  flashattn.tile_load %src[%row0] rows %rows into %t : memref<?x64xbf16, strided<[128, 1], offset: ?>> into memref<32x64xf32>
  return
}

// -----

// tile_load_paged: row r lives in page pages[r / page_size], slot r % page_size.
// CHECK-LABEL: func.func @load_paged
// CHECK: scf.for %[[R:[a-z0-9_]+]] = %c0 to %arg4 step
// CHECK:   %[[POS:[a-z0-9_]+]] = arith.addi %arg3, %[[R]]
// CHECK:   %[[SLOT:[a-z0-9_]+]] = arith.divsi %[[POS]], %c16
// CHECK:   %[[P:[a-z0-9_]+]] = memref.load %arg1[%[[SLOT]]]
// CHECK:   %[[PAGE:[a-z0-9_]+]] = arith.index_cast %[[P]] : i32 to index
// CHECK:   %[[IN:[a-z0-9_]+]] = arith.remsi %[[POS]], %c16
// CHECK:   vector.load %arg0[%[[PAGE]], %[[IN]], %arg2, %c0] : memref<8x16x2x64xf16>, vector<64xf16>
func.func @load_paged(%pool: memref<8x16x2x64xf16>, %pages: memref<4xi32>, %g: index, %row0: index, %rows: index, %t: memref<32x64xf32>) {
  flashattn.tile_load_paged %pool[%pages, %g, %row0] rows %rows into %t : memref<8x16x2x64xf16>, memref<4xi32> into memref<32x64xf32>
  return
}

// -----

// tile_load_paged with heads = 2: kv heads g and g + 1 of each row, heads
// fastest (tile rows 2 r and 2 r + 1); the zeros from row 2 rows on.
// CHECK-LABEL: func.func @load_paged_heads
// CHECK: scf.for %[[R:[a-z0-9_]+]] = %c0 to %arg4 step
// CHECK:   %[[AT0:[a-z0-9_]+]] = arith.muli %[[R]], %c2
// CHECK:   vector.load %arg0[%{{.*}}, %{{.*}}, %arg2, %c0] : memref<8x16x4x64xf16>, vector<64xf16>
// CHECK:   vector.store %{{.*}}, %arg5[%[[AT0]], %c0]
// CHECK:   %[[G1:[a-z0-9_]+]] = arith.addi %arg2, %c1
// CHECK:   vector.load %arg0[%{{.*}}, %{{.*}}, %[[G1]], %c0]
// CHECK:   %[[AT1:[a-z0-9_]+]] = arith.addi %[[AT0]], %c1
// CHECK:   vector.store %{{.*}}, %arg5[%[[AT1]], %c0]
// CHECK: %[[ZROWS:[a-z0-9_]+]] = arith.muli %arg4, %c2
// CHECK: scf.for %{{.*}} = %[[ZROWS]] to %c32 step
func.func @load_paged_heads(%pool: memref<8x16x4x64xf16>, %pages: memref<4xi32>, %g: index, %row0: index, %rows: index, %t: memref<32x64xf32>) {
  flashattn.tile_load_paged %pool[%pages, %g, %row0] rows %rows into %t {heads = 2 : i64} : memref<8x16x4x64xf16>, memref<4xi32> into memref<32x64xf32>
  return
}

// -----

// tile_qk: K transposed once into a [D, N] alloca at function entry, then
// S = Q Kt by the register-blocked micro-kernel: blocks of 8 rows x 8
// columns (one AVX2 register; 16 with vector-bits=512), 8 accumulators
// carried over head_dim, each K^T chunk loaded once per 8 rows, scaled.
// CHECK-LABEL: func.func @qk
// CHECK-NEXT: %[[KT:[a-z0-9_]+]] = memref.alloca() : memref<64x32xf32>
// CHECK: scf.for %[[J:[a-z0-9_]+]] = %c0 to %c32
// CHECK:   scf.for %[[X:[a-z0-9_]+]] = %c0 to %c64
// CHECK:     %[[KV:[a-z0-9_]+]] = memref.load %arg1[%[[J]], %[[X]]]
// CHECK:     memref.store %[[KV]], %[[KT]][%[[X]], %[[J]]]
// CHECK: %[[SCALE:[a-z0-9_]+]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK: scf.for %[[I0:[a-z0-9_]+]] = %c0 to %c16 step %c8
// CHECK:   scf.for %[[J0:[a-z0-9_]+]] = %c0 to %c32 step %c8
// CHECK:     %[[R:[a-z0-9_]+]]:8 = scf.for %[[D:[a-z0-9_]+]] = %c0 to %c64 step %c1 iter_args(%[[A0:[a-z0-9_]+]] = %{{.*}}, {{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK:       %[[KR:[a-z0-9_]+]] = vector.load %[[KT]][%[[D]], %[[J0]]] : memref<64x32xf32>, vector<8xf32>
// CHECK:       %[[QV:[a-z0-9_]+]] = memref.load %arg0[%[[I0]], %[[D]]]
// CHECK:       %[[QB:[a-z0-9_]+]] = vector.broadcast %[[QV]] : f32 to vector<8xf32>
// CHECK:       vector.fma %[[QB]], %[[KR]], %[[A0]] : vector<8xf32>
// CHECK-COUNT-7: vector.fma %{{.*}}, %[[KR]], %{{.*}} : vector<8xf32>
// CHECK:       scf.yield
// CHECK:     %[[S0:[a-z0-9_]+]] = arith.mulf %[[R]]#0, %[[SCALE]] : vector<8xf32>
// CHECK:     vector.store %[[S0]], %arg2[%[[I0]], %[[J0]]]
// AVX512-LABEL: func.func @qk
// AVX512: scf.for %{{.*}} = %c0 to %c32 step %c16
// AVX512: vector.fma {{.*}} : vector<16xf32>
func.func @qk(%q: memref<16x64xf32>, %k: memref<32x64xf32>, %s: memref<16x32xf32>) {
  flashattn.tile_qk %q, %k into %s {scale = 0.5 : f32} : memref<16x64xf32>, memref<32x64xf32> into memref<16x32xf32>
  return
}

// -----

// tile_qk with one query row (decode): a dot product per score.
// CHECK-LABEL: func.func @qk_decode
// CHECK-NOT: memref.alloca
// CHECK: %[[QR:[a-z0-9_]+]] = vector.load %arg0[%{{.*}}, %c0] : memref<1x64xf32>, vector<64xf32>
// CHECK: scf.for %[[J:[a-z0-9_]+]] = %c0 to %c32
// CHECK:   %[[KR:[a-z0-9_]+]] = vector.load %arg1[%[[J]], %c0]
// CHECK:   %[[P:[a-z0-9_]+]] = arith.mulf %[[QR]], %[[KR]] : vector<64xf32>
// CHECK:   %[[D:[a-z0-9_]+]] = vector.reduction <add>, %[[P]] : vector<64xf32> into f32
func.func @qk_decode(%q: memref<1x64xf32>, %k: memref<32x64xf32>, %s: memref<1x32xf32>) {
  flashattn.tile_qk %q, %k into %s {scale = 0.5 : f32} : memref<1x64xf32>, memref<32x64xf32> into memref<1x32xf32>
  return
}

// -----

// tile_softmax: per row, max (maxnumf), the -inf guard (0 in the exponent
// when the new max is -inf), exp2 of the shifted row, alpha, the row sum and
// the accumulator rescale.
// CHECK-LABEL: func.func @softmax
// CHECK: scf.for %[[I:[a-z0-9_]+]] =
// CHECK:   %[[ROW:[a-z0-9_]+]] = vector.load %arg0[%[[I]], %c0] : memref<16x32xf32>, vector<32xf32>
// CHECK:   %[[MX:[a-z0-9_]+]] = vector.reduction <maxnumf>, %[[ROW]]
// CHECK:   %[[MOLD:[a-z0-9_]+]] = memref.load %arg1[%[[I]]]
// CHECK:   %[[MNEW:[a-z0-9_]+]] = arith.maxnumf %[[MOLD]], %[[MX]] : f32
// CHECK:   %[[EMPTY:[a-z0-9_]+]] = arith.cmpf oeq, %[[MNEW]], %{{.*}} : f32
// CHECK:   %[[MUSE:[a-z0-9_]+]] = arith.select %[[EMPTY]], %{{.*}}, %[[MNEW]] : f32
// CHECK:   %[[B:[a-z0-9_]+]] = vector.broadcast %[[MUSE]] : f32 to vector<32xf32>
// CHECK:   %[[SH:[a-z0-9_]+]] = arith.subf %[[ROW]], %[[B]] : vector<32xf32>
// CHECK:   %[[P:[a-z0-9_]+]] = math.exp2 %[[SH]] : vector<32xf32>
// CHECK:   vector.store %[[P]], %arg0[%[[I]], %c0]
// CHECK:   %[[D:[a-z0-9_]+]] = arith.subf %[[MOLD]], %[[MUSE]] : f32
// CHECK:   %[[ALPHA:[a-z0-9_]+]] = math.exp2 %[[D]] : f32
// CHECK:   %[[SUM:[a-z0-9_]+]] = vector.reduction <add>, %[[P]]
// CHECK:   %[[LOLD:[a-z0-9_]+]] = memref.load %arg2[%[[I]]]
// CHECK:   %[[SC:[a-z0-9_]+]] = arith.mulf %[[LOLD]], %[[ALPHA]] : f32
// CHECK:   %[[LNEW:[a-z0-9_]+]] = arith.addf %[[SC]], %[[SUM]] : f32
// CHECK:   memref.store %[[LNEW]], %arg2[%[[I]]]
// CHECK:   memref.store %[[MNEW]], %arg1[%[[I]]]
// CHECK:   %[[ACC:[a-z0-9_]+]] = vector.load %arg3[%[[I]], %c0] : memref<16x64xf32>, vector<64xf32>
// CHECK:   %[[AB:[a-z0-9_]+]] = vector.broadcast %[[ALPHA]] : f32 to vector<64xf32>
// CHECK:   %[[NACC:[a-z0-9_]+]] = arith.mulf %[[ACC]], %[[AB]]
// CHECK:   vector.store %[[NACC]], %arg3[%[[I]], %c0]
func.func @softmax(%s: memref<16x32xf32>, %m: memref<16xf32>, %l: memref<16xf32>, %acc: memref<16x64xf32>) {
  flashattn.tile_softmax %s, %m, %l, %acc : memref<16x32xf32>, memref<16xf32>, memref<16xf32>, memref<16x64xf32>
  return
}

// -----

// tile_pv: acc += P V with the same micro-kernel, accumulating onto acc.
// CHECK-LABEL: func.func @pv
// CHECK: scf.for %[[I0:[a-z0-9_]+]] = %c0 to %c16 step %c8
// CHECK:   scf.for %[[C0:[a-z0-9_]+]] = %c0 to %c128 step %c8
// CHECK:     %[[ACC0:[a-z0-9_]+]] = vector.load %arg2[%[[I0]], %[[C0]]] : memref<16x128xf32>, vector<8xf32>
// CHECK:     %[[R:[a-z0-9_]+]]:8 = scf.for %[[J:[a-z0-9_]+]] = %c0 to %c32 step %c1 iter_args(%[[A0:[a-z0-9_]+]] = %[[ACC0]], {{.*}})
// CHECK:       %[[VR:[a-z0-9_]+]] = vector.load %arg1[%[[J]], %[[C0]]] : memref<32x128xf32>, vector<8xf32>
// CHECK:       %[[P:[a-z0-9_]+]] = memref.load %arg0[%[[I0]], %[[J]]]
// CHECK:       %[[PB:[a-z0-9_]+]] = vector.broadcast %[[P]] : f32 to vector<8xf32>
// CHECK:       vector.fma %[[PB]], %[[VR]], %[[A0]] : vector<8xf32>
// CHECK:     vector.store %[[R]]#0, %arg2[%[[I0]], %[[C0]]]
func.func @pv(%p: memref<16x32xf32>, %v: memref<32x128xf32>, %acc: memref<16x128xf32>) {
  flashattn.tile_pv %p, %v into %acc : memref<16x32xf32>, memref<32x128xf32> into memref<16x128xf32>
  return
}

// -----

// tile_store: out = acc / l (0 when l == 0), truncated to the output type;
// lse = m * ln 2 + log(l), -inf when l == 0.
// CHECK-LABEL: func.func @store
// CHECK: scf.for %[[R:[a-z0-9_]+]] = %c0 to %arg4 step
// CHECK:   %[[L:[a-z0-9_]+]] = memref.load %arg2[%[[R]]]
// CHECK:   %[[EMPTY:[a-z0-9_]+]] = arith.cmpf oeq, %[[L]], %{{.*}} : f32
// CHECK:   %[[INV:[a-z0-9_]+]] = arith.divf
// CHECK:   %[[SEL:[a-z0-9_]+]] = arith.select %[[EMPTY]], %{{.*}}, %[[INV]] : f32
// CHECK:   %[[T:[a-z0-9_]+]] = arith.truncf %{{.*}} : vector<64xf32> to vector<64xf16>
// CHECK:   vector.store %[[T]], %arg3[%[[R]], %c0]
// CHECK:   %[[LOG:[a-z0-9_]+]] = math.log %[[L]] : f32
// CHECK:   %[[LSE:[a-z0-9_]+]] = arith.select %[[EMPTY]], %{{.*}}, %{{.*}} : f32
// CHECK:   memref.store %[[LSE]], %arg5[%[[R]]]
func.func @store(%acc: memref<16x64xf32>, %m: memref<16xf32>, %l: memref<16xf32>,
                 %o: memref<?x64xf16, strided<[256, 1], offset: ?>>, %rows: index,
                 %lse: memref<?xf32, strided<[1], offset: ?>>) {
  flashattn.tile_store %acc, %m, %l into %o rows %rows lse %lse : memref<16x64xf32>, memref<16xf32>, memref<16xf32> into memref<?x64xf16, strided<[256, 1], offset: ?>>, memref<?xf32, strided<[1], offset: ?>>
  return
}

// -----

// Packed views (pack_gqa, G = 4 heads): row r of the tile is q[r / 4, r % 4],
// out[r / 4, r % 4] and lse[r % 4, r / 4].
// CHECK-LABEL: func.func @packed
// CHECK: scf.for %[[R:[a-z0-9_]+]] = %c0 to %arg2 step
// CHECK:   %[[ROW:[a-z0-9_]+]] = arith.addi %arg1, %[[R]]
// CHECK:   %[[POS:[a-z0-9_]+]] = arith.divui %[[ROW]], %c4
// CHECK:   %[[HEAD:[a-z0-9_]+]] = arith.remui %[[ROW]], %c4
// CHECK:   vector.load %arg0[%[[POS]], %[[HEAD]], %c0] : memref<?x4x64xbf16, strided<[512, 64, 1], offset: ?>>, vector<64xbf16>
// CHECK: scf.for %[[S:[a-z0-9_]+]] = %c0 to %arg2 step
// CHECK:   %[[OPOS:[a-z0-9_]+]] = arith.divui %[[S]], %c4
// CHECK:   %[[OHEAD:[a-z0-9_]+]] = arith.remui %[[S]], %c4
// CHECK:   vector.store %{{.*}}, %arg7[%[[OPOS]], %[[OHEAD]], %c0]
// CHECK:   memref.store %{{.*}}, %arg8[%[[OHEAD]], %[[OPOS]]]
func.func @packed(%q: memref<?x4x64xbf16, strided<[512, 64, 1], offset: ?>>, %row0: index,
                  %rows: index, %t: memref<32x64xf32>, %acc: memref<32x64xf32>,
                  %m: memref<32xf32>, %l: memref<32xf32>,
                  %o: memref<?x4x64xbf16, strided<[512, 64, 1], offset: ?>>,
                  %lse: memref<4x?xf32, strided<[?, 1], offset: ?>>) {
  flashattn.tile_load %q[%row0] rows %rows into %t : memref<?x4x64xbf16, strided<[512, 64, 1], offset: ?>> into memref<32x64xf32>
  flashattn.tile_store %acc, %m, %l into %o rows %rows lse %lse : memref<32x64xf32>, memref<32xf32>, memref<32xf32> into memref<?x4x64xbf16, strided<[512, 64, 1], offset: ?>>, memref<4x?xf32, strided<[?, 1], offset: ?>>
  return
}

// -----

// combine: per output row (b, s, h), the max over splits of lse_s, the sum of
// exp(lse_s - max) (empty splits weigh 0), weights normalized, an fma over
// the split outputs; all splits empty gives 0 and -inf.
// CHECK-LABEL: func.func @combine
// CHECK: scf.for %[[B:[a-z0-9_]+]] = %c0 to %c2
// CHECK:   scf.for %[[S:[a-z0-9_]+]] = %c0 to %c3
// CHECK:     scf.for %[[H:[a-z0-9_]+]] = %c0 to %c4
// CHECK:       %[[MX:[a-z0-9_]+]] = scf.for %[[SP:[a-z0-9_]+]] = %c0 to %c5 step %c1 iter_args
// CHECK:         memref.load %arg1[%[[SP]], %[[B]], %[[H]], %[[S]]]
// CHECK:         arith.maxnumf
// CHECK:       %[[ALL:[a-z0-9_]+]] = arith.cmpf oeq, %[[MX]]
// CHECK:       scf.for
// CHECK:         math.exp
// CHECK:       %[[ACC:[a-z0-9_]+]] = scf.for
// CHECK:         vector.load %arg0[%{{.*}}, %[[B]], %[[S]], %[[H]], %c0] : memref<5x2x3x4x64xf32>, vector<64xf32>
// CHECK:         vector.fma
// CHECK:       arith.truncf %[[ACC]] : vector<64xf32> to vector<64xbf16>
// CHECK:       math.log
// CHECK:       memref.store %{{.*}}, %arg3[%[[B]], %[[H]], %[[S]]]
func.func @combine(%po: memref<5x2x3x4x64xf32>, %pl: memref<5x2x4x3xf32>, %o: memref<2x3x4x64xbf16>, %l: memref<2x4x3xf32>) {
  flashattn.combine ins(%po, %pl : memref<5x2x3x4x64xf32>, memref<5x2x4x3xf32>) outs(%o, %l : memref<2x3x4x64xbf16>, memref<2x4x3xf32>)
  return
}

// -----

// tile_map: loops over rows and columns; the ops that depend on neither the
// score nor the column (the row's key end) once per row, the rest per
// element between a load and a store of the score.
// CHECK-LABEL: func.func @tile_map
// CHECK: scf.for %[[I:[a-z0-9_]+]] = %c0 to %arg1 step %c1 {
// CHECK-NEXT:   %[[ROW:.*]] = arith.addi %arg3, %[[I]] : index
// CHECK-NEXT:   %[[END:.*]] = flashattn.key_end row %[[ROW]] keys %arg5 offset %arg6
// CHECK-NEXT:   scf.for %[[J:[a-z0-9_]+]] = %c0 to %arg2 step %c1 {
// CHECK-NEXT:     %[[X:.*]] = memref.load %arg0[%[[I]], %[[J]]] : memref<16x32xf32>
// CHECK-NEXT:     %[[KEY:.*]] = arith.addi %arg4, %[[J]] : index
// CHECK-NEXT:     %[[OK:.*]] = arith.cmpi slt, %[[KEY]], %[[END]] : index
// CHECK-NEXT:     %[[Y:.*]] = arith.select %[[OK]], %[[X]], %{{.*}} : f32
// CHECK-NEXT:     memref.store %[[Y]], %arg0[%[[I]], %[[J]]] : memref<16x32xf32>
func.func @tile_map(%s: memref<16x32xf32>, %rows: index, %cols: index, %m0: index, %n0: index,
                    %sk: index, %c: index) {
  %ninf = arith.constant 0xFF800000 : f32
  flashattn.tile_map %s rows %rows cols %cols {
  ^bb0(%x: f32, %i: index, %j: index):
    %row = arith.addi %m0, %i : index
    %end = flashattn.key_end row %row keys %sk offset %c {causal = #flashattn.causal<bottom_right>} : index
    %key = arith.addi %n0, %j : index
    %ok = arith.cmpi slt, %key, %end : index
    %y = arith.select %ok, %x, %ninf : f32
    flashattn.yield %y : f32
  } : memref<16x32xf32>
  return
}
