// RUN: fa-opt %s --convert-flashattn-sm90-to-nvvm --split-input-file --verify-diagnostics

// wgmma instructions are .aligned over the warpgroup: a wait in the arms of
// a branch on a warp's vote (the four warps may vote differently) is
// refused, pointing at the vote.
llvm.func @wait_under_vote(%p: i1) {
  %m = llvm.mlir.constant(-1 : i32) : i32
  // expected-note @below {{the vote}}
  %any = nvvm.vote.sync any %m, %p -> i1
  scf.if %any {
    // expected-error @below {{under a branch on a per-warp vote: wgmma instructions are .aligned}}
    nvvm.wgmma.wait.group.sync.aligned 0
  }
  llvm.return
}

// -----

// The same through the branch condition's logic, with the wait nested in a
// second scf.if.
llvm.func @fence_under_vote_logic(%p: i1, %q: i1) {
  %m = llvm.mlir.constant(-1 : i32) : i32
  // expected-note @below {{the vote}}
  %any = nvvm.vote.sync any %m, %p -> i1
  %c = arith.andi %any, %q : i1
  scf.if %c {
    scf.if %q {
      // expected-error @below {{under a branch on a per-warp vote}}
      nvvm.wgmma.fence.aligned
    }
  }
  llvm.return
}

// -----

// Before the branch (or under a branch on another value) a wait is fine.
llvm.func @wait_before_vote_branch(%p: i1, %x: f32) -> f32 {
  %m = llvm.mlir.constant(-1 : i32) : i32
  %any = nvvm.vote.sync any %m, %p -> i1
  nvvm.wgmma.wait.group.sync.aligned 0
  %r = scf.if %any -> (f32) {
    %y = llvm.fmul %x, %x : f32
    scf.yield %y : f32
  } else {
    scf.yield %x : f32
  }
  scf.if %p {
    nvvm.wgmma.commit.group.sync.aligned
  }
  llvm.return %r : f32
}
