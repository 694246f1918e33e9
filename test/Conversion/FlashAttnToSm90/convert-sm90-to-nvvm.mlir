// RUN: fa-opt %s --convert-flashattn-sm90-to-nvvm | FileCheck %s

// flashattn.wgmma_rs becomes the RS wgmma of PTX ISA 9.7.15.5.2 in inline
// asm, in place: the accumulator's N / 2 f32 extracted and tied to the
// outputs ($0..$3 -> inputs 0..3), the four A registers $8..$11, the B
// descriptor $12; scale-d from a predicate set to 1, B transposed.
// CHECK-LABEL: llvm.func @rs
// CHECK-SAME: (%[[ACC:.*]]: !llvm.struct<(f32, f32, f32, f32)>, %[[A0:.*]]: i32, %[[A1:.*]]: i32, %[[A2:.*]]: i32, %[[A3:.*]]: i32, %[[B:.*]]: i64)
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[E0:.*]] = llvm.extractvalue %[[ACC]][0]
// CHECK-NEXT: %[[E1:.*]] = llvm.extractvalue %[[ACC]][1]
// CHECK-NEXT: %[[E2:.*]] = llvm.extractvalue %[[ACC]][2]
// CHECK-NEXT: %[[E3:.*]] = llvm.extractvalue %[[ACC]][3]
// CHECK-NEXT: %[[O:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, {$8, $9, $10, $11}, $12, p, 1, 1, 1;\0A}", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,l" %[[E0]], %[[E1]], %[[E2]], %[[E3]], %[[A0]], %[[A1]], %[[A2]], %[[A3]], %[[B]]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: llvm.return %[[O]]
// CHECK-NOT: flashattn.wgmma_rs
llvm.func @rs(%acc: !llvm.struct<(f32, f32, f32, f32)>, %a0: i32, %a1: i32, %a2: i32, %a3: i32, %b: i64) -> !llvm.struct<(f32, f32, f32, f32)> {
  nvvm.wgmma.fence.aligned
  %o = flashattn.wgmma_rs %acc, [%a0, %a1, %a2, %a3], %b {element = f16, n = 8 : i64} : !llvm.struct<(f32, f32, f32, f32)>
  nvvm.wgmma.commit.group.sync.aligned
  llvm.return %o : !llvm.struct<(f32, f32, f32, f32)>
}

// The other instructions NVVM lacks, each one inline PTX in place:
// createpolicy over the whole access (fraction 1.0) with the op's priority;
// the opaque mov.b32; the predicated mbarrier.arrive, its predicate a u32
// and the barrier's shared address as 64 bits; atom.acq_rel.gpu with the
// op's immediate. All keep side effects (LLVM must not move, merge or drop
// them).
// CHECK-LABEL: llvm.func @instructions
// CHECK-SAME: (%[[X:.*]]: i32, %[[P:.*]]: i1, %[[BAR:.*]]: !llvm.ptr<3>, %[[CNT:.*]]: !llvm.ptr<1>)
// CHECK-NEXT: %[[FIRST:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "createpolicy.fractional.L2::evict_first.b64 $0, 1.0;", "=l"  : () -> i64
// CHECK-NEXT: %[[LAST:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "createpolicy.fractional.L2::evict_last.b64 $0, 1.0;", "=l"  : () -> i64
// CHECK-NEXT: %[[Y:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "mov.b32 $0, $1;", "=r,r" %[[X]] : (i32) -> i32
// CHECK-NEXT: %[[FLAG:.*]] = llvm.zext %[[P]] : i1 to i32
// CHECK-NEXT: %[[ADDR:.*]] = llvm.ptrtoint %[[BAR]] : !llvm.ptr<3> to i64
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0A.reg .b64 st;\0Asetp.ne.u32 p, $0, 0;\0A@p mbarrier.arrive.shared.b64 st, [$1];\0A}", "r,l" %[[FLAG]], %[[ADDR]] : (i32, i64) -> ()
// CHECK-NEXT: %[[OLD:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "atom.acq_rel.gpu.global.add.u32 $0, [$1], 3;", "=r,l" %[[CNT]] : (!llvm.ptr<1>) -> i32
// CHECK-NEXT: llvm.call @use(%[[FIRST]], %[[LAST]], %[[Y]], %[[OLD]])
// CHECK-NOT: flashattn.
llvm.func @use(i64, i64, i32, i32)
llvm.func @instructions(%x: i32, %p: i1, %bar: !llvm.ptr<3>, %counter: !llvm.ptr<1>) {
  %first = flashattn.l2_policy evict_first
  %last = flashattn.l2_policy evict_last
  %y = flashattn.opaque %x : i32
  flashattn.mbarrier_arrive_if %p, %bar : !llvm.ptr<3>
  %old = flashattn.atomic_add_acq_rel %counter, 3 : !llvm.ptr<1>
  llvm.call @use(%first, %last, %y, %old) : (i64, i64, i32, i32) -> ()
  llvm.return
}
