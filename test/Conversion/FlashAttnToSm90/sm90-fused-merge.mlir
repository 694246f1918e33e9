// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-split-kv --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s
// RUN: fa-opt %s --flashattn-plan="target=sm90 fused-merge=off" --flashattn-split-kv --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s --check-prefix=OFF

// The plan's fused_merge (on with splits): after a tile's partial out and
// lse are stored, the consumers (256 threads) meet at their named barrier;
// thread 0 adds 1 to the tile's counter (work unit / S, split fastest) with
// an acq_rel atomic, and the unit that finds S - 1 there (the tile's last)
// resets it and flags the tile in shared memory; after a second barrier that unit's
// consumers merge the tile's rows (D / 4 = 32 units of 4 columns a row,
// strided by 256) over the S splits, 16 at a time, with volatile loads, into
// the final bf16 out and the f32 lse (when not null). A null counter
// pointer skips it all (the runtime's combine kernel merges).
// CHECK-LABEL: func.func @split
// CHECK: fused_merge = true
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: !llvm.ptr<1>, %[[LSE:[a-z0-9]+]]: !llvm.ptr<1>, %[[CTR:[a-z0-9]+]]: !llvm.ptr<1>) attributes
// CHECK-SAME: #flashattn.param<kind = merge_out>, #flashattn.param<kind = merge_lse>, #flashattn.param<kind = merge_counters>
// CHECK: %[[S:.*]] = arith.trunci %[[S64:.*]] : i64 to i32
// CHECK-NEXT: %[[WORK:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK-NEXT: %[[UNIT:.*]] = arith.divui %[[WORK]], %[[S]] : i32
// CHECK: %[[ON:.*]] = llvm.icmp "ne" %[[CTR]], %{{.*}} : !llvm.ptr<1>
// CHECK-NEXT: scf.if %[[ON]] {
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// CHECK-NEXT: %[[FLAG:.*]] = llvm.getelementptr
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[T0:.*]] = arith.cmpi eq, %{{.*}}, %[[ZERO]] : i32
// CHECK-NEXT: scf.if %[[T0]] {
// CHECK-NEXT: %[[UNIT64:.*]] = arith.extui %[[UNIT]] : i32 to i64
// CHECK-NEXT: %[[PTR:.*]] = llvm.getelementptr %[[CTR]][%[[UNIT64]]]
// CHECK-NEXT: %[[OLD:.*]] = flashattn.atomic_add_acq_rel %[[PTR]], 1
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[OLD]]
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK: llvm.store %{{.*}}, %[[PTR]] : i32
// CHECK-NEXT: }
// Every unit writes the flag (0 unless last), so no earlier tile's 1 stays.
// CHECK-NEXT: %[[IS:.*]] = arith.extui %[[LAST]] : i1 to i32
// CHECK-NEXT: llvm.store %[[IS]], %[[FLAG]] : i32, !llvm.ptr<3>
// CHECK-NEXT: }
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: llvm.load %[[FLAG]] : !llvm.ptr<3> -> i32
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c256_i32{{.*}} : i32
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[S64]] step %c16_i64
// CHECK: llvm.load volatile %{{.*}} : !llvm.ptr<1> -> f32
// CHECK: llvm.load volatile %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: %[[BF:.*]] = arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// CHECK-NEXT: %[[AT:.*]] = llvm.getelementptr %[[OUT]]
// CHECK-NEXT: llvm.store %[[BF]], %[[AT]] {alignment = 8 : i64}
// CHECK: llvm.icmp "ne" %[[LSE]]
// CHECK: llvm.getelementptr %[[LSE]]
// CHECK: llvm.func @fa_sm90_0_combine(

// Without it the partial kernels take no merge parameters and count
// nothing: the combine kernel merges.
// OFF-LABEL: func.func @split
// OFF-NOT: fused_merge
// OFF-NOT: kind = merge_
// OFF-NOT: atomic_add_acq_rel
// OFF: llvm.func @fa_sm90_0_combine(
func.func @split(%q: memref<2x8x4x128xbf16>, %k: memref<2x4096x2x128xbf16>, %v: memref<2x4096x2x128xbf16>,
                 %o: memref<2x8x4x128xbf16>, %l: memref<2x4x8xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x8x4x128xbf16>, memref<2x4096x2x128xbf16>, memref<2x4096x2x128xbf16>)
      outs(%o, %l : memref<2x8x4x128xbf16>, memref<2x4x8xf32>) {num_splits = 4 : i64}
  return
}
