// fa-compile says why it refuses a configuration (fa_config_validate's
// reason) and rejects option values it does not know; nothing is written.
// RUN: rm -f %t.faa
// RUN: not fa-compile --hq 3 --hkv 2 -o %t.faa 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: not fa-compile --num-splits 300 -o %t.faa 2>&1 | FileCheck %s --check-prefix=SPLITS
// RUN: not fa-compile --d 0 -o %t.faa 2>&1 | FileCheck %s --check-prefix=DIM
// RUN: not fa-compile --alibi bogus -o %t.faa 2>&1 | FileCheck %s --check-prefix=ALIBI
// RUN: not fa-compile --target sm80 -o %t.faa 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not fa-compile --l2-hint-q bogus -o %t.faa 2>&1 | FileCheck %s --check-prefix=TUNING
// RUN: not fa-compile --predicated-q-release on -o %t.faa 2>&1 | FileCheck %s --check-prefix=TUNING
// RUN: not fa-compile --target sm90 --predicated-q-release bogus -o %t.faa 2>&1 | FileCheck %s --check-prefix=SWITCH
// RUN: not fa-compile --prefetch-next-q on -o %t.faa 2>&1 | FileCheck %s --check-prefix=TUNING
// RUN: not fa-compile --descending-key-blocks on -o %t.faa 2>&1 | FileCheck %s --check-prefix=TUNING
// RUN: not fa-compile --target sm90 --prefetch-next-q bogus -o %t.faa 2>&1 | FileCheck %s --check-prefix=PREFETCH
// RUN: not fa-compile --target sm90 --descending-key-blocks bogus -o %t.faa 2>&1 | FileCheck %s --check-prefix=DESCENDING
// RUN: not fa-compile --rescale-under-qk on -o %t.faa 2>&1 | FileCheck %s --check-prefix=TUNING
// RUN: not fa-compile --target sm90 --rescale-under-qk bogus -o %t.faa 2>&1 | FileCheck %s --check-prefix=UNDERQK
// RUN: not test -e %t.faa

// HEADS: fa-compile: invalid configuration: num_q_heads (3) must be a positive multiple of num_kv_heads (2)
// SPLITS: fa-compile: invalid configuration: num_splits must be in [0, 256]
// DIM: fa-compile: invalid configuration: head_dim 0 / head_dim_v 0 out of range (1..512)
// ALIBI: fa-compile: --alibi takes heads or batch-heads, got 'bogus'
// TARGET: fa-compile: --target takes host or sm90, got 'sm80'
// TUNING: fa-compile: the sm90 tuning options (--block-m ... --l2-hint-kv) need --target sm90
// SWITCH: flashattn-plan: predicated-q-release takes auto, on or off, got 'bogus'
// PREFETCH: flashattn-plan: prefetch-next-q takes auto, on or off, got 'bogus'
// DESCENDING: flashattn-plan: descending-key-blocks takes auto, on or off, got 'bogus'
// UNDERQK: flashattn-plan: rescale-under-qk takes auto, on or off, got 'bogus'

// A regions file holds score / mask regions and nothing else: text that
// closes a region and adds an op of its own is refused, never compiled in.
// RUN: not fa-compile --d 64 --dtype f32 --regions-file %S/Inputs/injected.regions -o %t.faa 2>&1 | FileCheck %s --check-prefix=INJECT
// INJECT: only score(...) { ... } and mask(...) { ... } may appear, found 'llvm.func'

// A write that fails (a full disk) is an error with the reason, not an
// LLVM fatal error.
// RUN: not fa-compile --d 64 --dtype f32 -o /dev/full 2>&1 | FileCheck %s --check-prefix=FULL
// FULL: fa-compile: cannot write /dev/full: No space left on device
// FULL-NOT: LLVM ERROR
