// RUN: fa-opt %s --flashattn-sm90-warpgroup --split-input-file --verify-diagnostics | FileCheck %s

// flashattn-tile's combine kernel: each memref argument becomes a pointer
// and its dims in the ABI (pointers first, then dims), index is i64, the
// accesses are address arithmetic on the identity layouts and
// flashattn.merge_splits the online merge over the splits of
// partial_lse's dim 0, 16 loads of each a step: split s's lse at s * (B *
// H * Sq) + ((b * H + h) * Sq + i), its out at s * (B * Sq * H * D) + (((b
// * Sq + i) * H + h) * D + d); the threads take 128 a block.
// CHECK-LABEL: gpu.module @combine_kernel
// CHECK: llvm.func @combine(%[[PO:.*]]: !llvm.ptr<1>, %[[PL:.*]]: !llvm.ptr<1>, %[[OUT:.*]]: !llvm.ptr<1>, %[[LSE:.*]]: !llvm.ptr<1>, %[[S:[a-z0-9]+]]: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %[[LS:[a-z0-9]+]]: i64, %[[LB:[a-z0-9]+]]: i64, %{{.*}}: i64, %[[LSQ:[a-z0-9]+]]: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-SAME: flashattn.abi = #flashattn.kernel_abi<threads = 128, smem = 0, params = [#flashattn.param<kind = ptr, arg = "partial_out">, #flashattn.param<kind = ptr, arg = "partial_lse">, #flashattn.param<kind = ptr, arg = "out">, #flashattn.param<kind = ptr, arg = "lse">, #flashattn.param<kind = dims, arg = "partial_out", rank = 5>, #flashattn.param<kind = dims, arg = "partial_lse", rank = 4>, #flashattn.param<kind = dims, arg = "out", rank = 4>, #flashattn.param<kind = dims, arg = "lse", rank = 3>]>
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK: %[[TID32:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[TID:.*]] = arith.extui %[[TID32]] : i32 to i64
// CHECK: scf.for %[[E:.*]] = %[[TID]] to %{{.*}} step %{{.*}} : i64 {
// CHECK:   %[[LBH:.*]] = arith.muli %[[LB]], %c4_i64{{.*}} : i64
// CHECK:   %[[LSTRIDE:.*]] = arith.muli %[[LBH]], %[[LSQ]] : i64
// CHECK:   %[[LAST:.*]] = arith.subi %[[LS]], %{{.*}} : i64
// CHECK:   %[[MERGED:.*]]:3 = scf.for %[[SPLIT:.*]] = %{{.*}} to %[[LS]] step %c16_i64 iter_args({{.*}}) -> (f32, f32, f32) : i64 {
// CHECK:     %[[S0:.*]] = arith.minui %{{.*}}, %[[LAST]] : i64
// CHECK:     %[[LOFF:.*]] = arith.muli %[[S0]], %[[LSTRIDE]] : i64
// CHECK:     %[[LAT:.*]] = arith.addi %[[LOFF]], %{{.*}} : i64
// CHECK:     %[[LP:.*]] = llvm.getelementptr %[[PL]][%[[LAT]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK:     llvm.load %[[LP]] : !llvm.ptr<1> -> f32
// CHECK:     llvm.getelementptr %[[PO]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-COUNT-30: llvm.load
// CHECK:     nvvm.ex2.approx.ftz.f
// CHECK:   %[[V:.*]] = arith.divf %[[MERGED]]#2, %[[MERGED]]#1 : f32
// CHECK:   %[[VAL:.*]] = arith.select %{{.*}}, %{{.*}}, %[[V]] : f32
// CHECK:   %[[L:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK:   %[[T:.*]] = arith.truncf %[[VAL]] : f32 to bf16
// CHECK:   %[[OP:.*]] = llvm.getelementptr %[[OUT]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK:   llvm.store %[[T]], %[[OP]] : bf16, !llvm.ptr<1>
// CHECK:   scf.if %{{.*}} {
// CHECK:     %[[LSEP:.*]] = llvm.getelementptr %[[LSE]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK:     llvm.store %[[L]], %[[LSEP]] : f32, !llvm.ptr<1>
// CHECK: llvm.return
gpu.module @combine_kernel {
  gpu.func @combine(%po: memref<?x?x?x4x64xf32> {flashattn.arg = "partial_out"}, %pl: memref<?x?x4x?xf32> {flashattn.arg = "partial_lse"}, %out: memref<?x?x4x64xbf16> {flashattn.arg = "out"}, %lse: memref<?x4x?xf32> {flashattn.arg = "lse"}) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %sq = memref.dim %out, %c1 : memref<?x?x4x64xbf16>
    %tid = gpu.thread_id x
    %total = arith.muli %sq, %c256 : index
    scf.for %e = %tid to %total step %c64 {
      %d = arith.remui %e, %c64 : index
      %i = arith.divui %e, %c64 : index
      %v, %l = flashattn.merge_splits %po[%c0, %i, %c1, %d], %pl[%c0, %c1, %i] : memref<?x?x?x4x64xf32>, memref<?x?x4x?xf32>
      %t = arith.truncf %v : f32 to bf16
      memref.store %t, %out[%c0, %i, %c1, %d] : memref<?x?x4x64xbf16>
      %first = arith.cmpi eq, %d, %c0 : index
      scf.if %first {
        memref.store %l, %lse[%c0, %c1, %i] : memref<?x4x?xf32>
      }
    }
    gpu.return
  }
}

// -----

// The append kernel: the tables are the runtime's parameters, after the
// tensors' pointers and dims, and read with invariant loads (sign-extended
// words); a 16-byte vector load and store keep the alignment the ops say;
// static dims (page_size 16, 2 kv heads, head_dim 64) are constants.
// CHECK-LABEL: gpu.module @append_kernel
// CHECK: llvm.func @append(%[[KN:.*]]: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %[[KC:.*]]: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %[[B:[a-z0-9]+]]: i64, %[[S:[a-z0-9]+]]: i64, {{.*}}, %[[POOL:[a-z0-9]+]]: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %[[TABLE:.*]]: !llvm.ptr<1>, %[[PAGES:.*]]: !llvm.ptr<1>)
// CHECK-SAME: params = [#flashattn.param<kind = ptr, arg = "k_new">, #flashattn.param<kind = ptr, arg = "v_new">, #flashattn.param<kind = ptr, arg = "k">, #flashattn.param<kind = ptr, arg = "v">, #flashattn.param<kind = dims, arg = "k_new", rank = 4>, #flashattn.param<kind = dims, arg = "v_new", rank = 4>, #flashattn.param<kind = dims, arg = "k", rank = 4>, #flashattn.param<kind = dims, arg = "v", rank = 4>, #flashattn.param<kind = tile_table>, #flashattn.param<kind = page_table>]
// CHECK-SAME: nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK: %[[W1P:.*]] = llvm.getelementptr %[[TABLE]][%c1_i64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK: %[[W1:.*]] = llvm.load %[[W1P]] invariant : !llvm.ptr<1> -> i32
// CHECK: %[[PAIRS:.*]] = arith.extsi %[[W1]] : i32 to i64
// CHECK: %[[CTA32:.*]] = nvvm.read.ptx.sreg.ctaid.x : i32
// CHECK: %[[CTA:.*]] = arith.extui %[[CTA32]] : i32 to i64
// CHECK: scf.for %[[BI:.*]] = %[[CTA]] to %[[B]] step %{{.*}} : i64 {
// CHECK:   %[[PP:.*]] = llvm.getelementptr %[[PAGES]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK:   %[[PW:.*]] = llvm.load %[[PP]] invariant : !llvm.ptr<1> -> i32
// CHECK:   %[[PAGE:.*]] = arith.extsi %[[PW]] : i32 to i64
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[PAGE]], %[[POOL]] : i64
// CHECK:   scf.if %[[IN]] {
// CHECK:     %[[R0:.*]] = arith.muli %[[BI]], %[[S]] : i64
// CHECK:     %[[SRC:.*]] = llvm.getelementptr %[[KN]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
// CHECK:     %[[X:.*]] = llvm.load %[[SRC]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xf16>
// CHECK:     %[[ROW:.*]] = arith.muli %[[PAGE]], %c16_i64 : i64
// CHECK:     %[[DST:.*]] = llvm.getelementptr %[[KC]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
// CHECK:     llvm.store %[[X]], %[[DST]] {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr<1>
gpu.module @append_kernel {
  gpu.func @append(%kn: memref<?x?x2x64xf16> {flashattn.arg = "k_new"}, %vn: memref<?x?x2x64xf16> {flashattn.arg = "v_new"}, %kc: memref<?x16x2x64xf16> {flashattn.arg = "k"}, %vc: memref<?x16x2x64xf16> {flashattn.arg = "v"}, %table: memref<?xi32> {flashattn.arg = "tile_table"}, %pages: memref<?xi32> {flashattn.arg = "page_table"}) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %w1 = memref.load %table[%c1] : memref<?xi32>
    %pairs = arith.index_cast %w1 : i32 to index
    %bid = gpu.block_id x
    %grid = gpu.grid_dim x
    %n = memref.dim %kn, %c0 : memref<?x?x2x64xf16>
    scf.for %b = %bid to %n step %grid {
      %w = memref.load %table[%pairs] : memref<?xi32>
      %pos = arith.index_cast %w : i32 to index
      %list = arith.addi %pairs, %c1 : index
      %lw = memref.load %table[%list] : memref<?xi32>
      %l = arith.index_cast %lw : i32 to index
      %slot = arith.divui %pos, %c16 : index
      %at = arith.addi %l, %slot : index
      %pw = memref.load %pages[%at] : memref<?xi32>
      %page = arith.index_cast %pw : i32 to index
      %pool = memref.dim %kc, %c0 : memref<?x16x2x64xf16>
      %in = arith.cmpi ult, %page, %pool : index
      scf.if %in {
        %row = arith.remui %pos, %c16 : index
        %x = vector.load %kn[%b, %c0, %c1, %c8] {alignment = 16 : i64} : memref<?x?x2x64xf16>, vector<8xf16>
        vector.store %x, %kc[%page, %row, %c1, %c8] {alignment = 16 : i64} : memref<?x16x2x64xf16>, vector<8xf16>
      }
    }
    gpu.return
  }
}

// -----

// An op the lowering does not know is reported.
gpu.module @unknown_op {
  gpu.func @combine(%po: memref<?x?x?x4x64xf32> {flashattn.arg = "partial_out"}) kernel {
    // expected-error @+1 {{flashattn-sm90-warpgroup: a combine or append kernel takes arith, math, scf, memref and vector accesses, x ids and flashattn.merge_splits only}}
    gpu.barrier
    gpu.return
  }
}

// -----

// The tables' extents are the runtime's: no dims to read.
gpu.module @table_dim {
  gpu.func @append(%kn: memref<?x?x2x64xf16> {flashattn.arg = "k_new"}, %table: memref<?xi32> {flashattn.arg = "tile_table"}) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{flashattn-sm90-warpgroup: constant dims of the kernel's tensors only (not of the tables)}}
    %n = memref.dim %table, %c0 : memref<?xi32>
    gpu.return
  }
}

// -----

// expected-error @+2 {{flashattn-sm90-warpgroup: argument 0 of a combine or append kernel is a named memref with an identity layout}}
gpu.module @strided {
  gpu.func @combine(%po: memref<4x8x64xf32, strided<[1024, 128, 1]>> {flashattn.arg = "partial_out"}) kernel {
    gpu.return
  }
}
