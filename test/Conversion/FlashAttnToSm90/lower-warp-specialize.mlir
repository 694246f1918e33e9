// RUN: fa-opt %s --flashattn-lower-warp-specialize --split-input-file | FileCheck %s

// Warpgroup 0 (tid / 128 == 0) runs the producer region after lowering its
// registers to 40; the other warpgroups run the consumers region after
// raising theirs to 232. The regions' ops move unchanged, in order, and
// may use values from above.
// CHECK-LABEL: llvm.func @kernel
// CHECK-SAME: (%[[P:.*]]: !llvm.ptr<3>)
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: %[[WG:.*]] = arith.divui %[[TID]], %c128_i32 : i32
// CHECK: %[[PRODUCER:.*]] = arith.cmpi eq, %[[WG]], %c0_i32 : i32
// CHECK: scf.if %[[PRODUCER]] {
// CHECK-NEXT:   nvvm.setmaxregister  decrease 40
// CHECK-NEXT:   nvvm.mbarrier.arrive %[[P]] : !llvm.ptr<3>
// CHECK-NEXT:   nvvm.barrier0
// CHECK-NEXT: } else {
// CHECK-NEXT:   nvvm.setmaxregister  increase 232
// CHECK-NEXT:   nvvm.mbarrier.try_wait.parity %[[P]], %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32, i32
// CHECK-NEXT: }
// CHECK-NEXT: llvm.return
// CHECK-NOT: flashattn.warp_specialize
llvm.func @kernel(%bar: !llvm.ptr<3>) attributes {nvvm.kernel} {
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  %phase = llvm.mlir.constant(0 : i32) : i32
  %ticks = llvm.mlir.constant(1000 : i32) : i32
  flashattn.warp_specialize %tid {consumer_regs = 232 : i32, producer_regs = 40 : i32} producer {
    nvvm.mbarrier.arrive %bar : !llvm.ptr<3>
    nvvm.barrier0
  } consumers {
    nvvm.mbarrier.try_wait.parity %bar, %phase, %ticks : !llvm.ptr<3>, i32, i32
  }
  llvm.return
}

// -----

// A budget of 0 keeps the launch's registers: no setmaxnreg on that side.
// CHECK-LABEL: llvm.func @no_budgets
// CHECK: scf.if
// CHECK-NEXT:   nvvm.barrier0
// CHECK-NEXT: } else {
// CHECK-NEXT:   nvvm.barrier0
// CHECK-NEXT: }
// CHECK-NOT: setmaxregister
llvm.func @no_budgets() attributes {nvvm.kernel} {
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  flashattn.warp_specialize %tid producer {
    nvvm.barrier0
  } consumers {
    nvvm.barrier0
  }
  llvm.return
}
