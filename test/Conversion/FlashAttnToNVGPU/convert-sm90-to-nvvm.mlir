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
