// RUN: fa-opt %s --flashattn-sm90-pipeline=format=isa --split-input-file | FileCheck %s

// The sm90 pipeline ends in a gpu.binary whose PTX (sm_90a, PTX 8.0) has the
// TMA loads, the mbarrier waits and both wgmma forms: at head_dim 256, S =
// Q K^T from shared memory over the plan's 64-key blocks (N = 64) and O +=
// P V with P in registers (N = 256); no ptxas needed for PTX text.
// CHECK: gpu.binary @fa_sm90_0_module
// CHECK-SAME: chip = "sm_90a"
// CHECK-SAME: .target sm_90a
// CHECK-SAME: .entry fa_sm90_0(
// CHECK-DAG: .param .align 64 .b8 fa_sm90_0_param_{{[0-9]+}}[128]
// CHECK-DAG: mbarrier.try_wait.parity.shared.b64
// CHECK-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
func.func @hd256(%q: memref<1x128x4x256xf16>, %k: memref<1x128x1x256xf16>, %v: memref<1x128x1x256xf16>,
                 %o: memref<1x128x4x256xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x128x4x256xf16>, memref<1x128x1x256xf16>, memref<1x128x1x256xf16>)
      outs(%o : memref<1x128x4x256xf16>)
  return
}

// -----

// Split-KV: flashattn-split-kv runs inside the pipeline; one module, two
// entries (the partial attention and the combine).
// CHECK: gpu.binary @fa_sm90_0_module
// CHECK-SAME: .entry fa_sm90_0(
// CHECK-SAME: .entry fa_sm90_0_combine(
// CHECK-SAME: ex2.approx.ftz.f32
func.func @split(%q: memref<1x1x4x64xbf16>, %k: memref<1x4096x4x64xbf16>, %v: memref<1x4096x4x64xbf16>,
                 %o: memref<1x1x4x64xbf16>, %l: memref<1x4x1xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1x4x64xbf16>, memref<1x4096x4x64xbf16>, memref<1x4096x4x64xbf16>)
      outs(%o, %l : memref<1x1x4x64xbf16>, memref<1x4x1xf32>) {num_splits = 4}
  return
}
