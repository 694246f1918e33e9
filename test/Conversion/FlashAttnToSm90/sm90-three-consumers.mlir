// RUN: fa-opt %s --flashattn-plan=target=sm90 --flashattn-tile --flashattn-sm90-pipeline-kv --flashattn-sm90-warp-specialize --flashattn-sm90-warpgroup | FileCheck %s

// Unmasked head_dim 64 (softmax-bound): flashattn-plan takes 3
// consumer warpgroups over 192-row tiles, 512 threads, setmaxnreg 160 for
// the consumers and 32 for the producer. The warpgroup index goes through
// shfl.sync idx (warp-uniform for ptxas). The consumers' turns go round:
// consumer g waits on named barrier 2 + g (256 threads: its own and the
// previous consumer's arrives) and hands over to (g + 1) mod 3, each id a
// constant in the consumer's own branch; consumer 2 hands the first turn
// to consumer 0. V's rows past the 500 keys are zeroed (in the dense
// layout only the 3-consumer kernels zero them) under named barrier 1 of
// all 384 consumer threads.
// CHECK-LABEL: func.func @hd64
// CHECK: plan = #flashattn.plan<target = sm90, block_m = 192, block_n = 128, stages = 2, consumers = 3,
// CHECK: llvm.func @fa_sm90_0(
// CHECK-SAME: threads = 512
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x
// CHECK: %[[G:.*]] = arith.divui %{{.*}}, %c128_i32
// CHECK: %[[WG:.*]] = nvvm.shfl.sync idx %{{.*}}, %[[G]], %{{.*}}, %c31_i32
// CHECK: flashattn.warp_specialize %[[TID]] {consumer_regs = 160 : i32, producer_regs = 32 : i32}
// CHECK: } consumers {
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[WG]], %c2_i32
// CHECK: scf.if %[[LAST]] {
// CHECK: %[[ID0:.*]] = arith.constant 2 : i32
// CHECK: nvvm.barrier.arrive id = %[[ID0]] number_of_threads = %c256_i32
// CHECK: %[[IS0:.*]] = arith.cmpi eq, %[[WG]], %c0_i32
// CHECK: scf.if %[[IS0]] {
// CHECK: nvvm.barrier id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: %[[IS1:.*]] = arith.cmpi eq, %[[WG]], %c1_i32
// CHECK: scf.if %[[IS1]] {
// CHECK: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// CHECK: %[[IS2:.*]] = arith.cmpi eq, %[[WG]], %c2_i32
// CHECK: scf.if %[[IS2]] {
// CHECK: nvvm.barrier id = %c4_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.mma_async
// CHECK: scf.if %{{.*}} {
// CHECK: nvvm.barrier.arrive id = %c3_i32 number_of_threads = %c256_i32
// CHECK: scf.if %{{.*}} {
// CHECK: nvvm.barrier.arrive id = %c4_i32{{.*}} number_of_threads = %c256_i32
// CHECK: scf.if %{{.*}} {
// CHECK: nvvm.barrier.arrive id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c384_i32
func.func @hd64(%q: memref<1x500x2x64xbf16>, %k: memref<1x500x2x64xbf16>, %v: memref<1x500x2x64xbf16>,
                %o: memref<1x500x2x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x500x2x64xbf16>, memref<1x500x2x64xbf16>, memref<1x500x2x64xbf16>)
      outs(%o : memref<1x500x2x64xbf16>) {num_splits = 1 : i64}
  return
}
