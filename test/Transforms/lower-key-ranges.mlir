// RUN: fa-opt %s --flashattn-lower-key-ranges --split-input-file | FileCheck %s

// key_end: min(Sk, row + offset + 1) under bottom-right causal, then
// min(.., row + offset + R + 1) under a right window of R = 3 keys.
// CHECK-LABEL: func.func @key_end
// CHECK-SAME: (%[[I:.*]]: i32, %[[SK:.*]]: i32, %[[C:.*]]: i32)
// CHECK-NOT: flashattn.key_end
// CHECK: %[[SHIFTED:.*]] = arith.addi %[[I]], %[[C]] : i32
// CHECK: %[[DIAG:.*]] = arith.addi %[[SHIFTED]], %c1_i32 : i32
// CHECK: %[[LIM:.*]] = arith.minsi %[[SK]], %[[DIAG]] : i32
// CHECK: %[[SHIFTED2:.*]] = arith.addi %[[I]], %[[C]] : i32
// CHECK: %[[RIGHT:.*]] = arith.addi %[[SHIFTED2]], %c4_i32 : i32
// CHECK: %[[LIM2:.*]] = arith.minsi %[[LIM]], %[[RIGHT]] : i32
// CHECK: return %[[LIM2]]
func.func @key_end(%i: i32, %sk: i32, %c: i32) -> i32 {
  %0 = flashattn.key_end row %i keys %sk offset %c {causal = #flashattn.causal<bottom_right>, window_right = 3} : i32
  return %0 : i32
}

// -----

// Top-left causal ignores the offset; without causal or window the limit
// is Sk itself.
// CHECK-LABEL: func.func @key_end_top_left
// CHECK-SAME: (%[[I:.*]]: index, %[[SK:.*]]: index, %[[C:.*]]: index)
// CHECK: %[[DIAG:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK: %[[LIM:.*]] = arith.minsi %[[SK]], %[[DIAG]] : index
// CHECK: return %[[LIM]], %[[SK]]
func.func @key_end_top_left(%i: index, %sk: index, %c: index) -> (index, index) {
  %0 = flashattn.key_end row %i keys %sk offset %c {causal = #flashattn.causal<top_left>} : index
  %1 = flashattn.key_end row %i keys %sk offset %c : index
  return %0, %1 : index, index
}

// -----

// key_begin: row + offset - L.
// CHECK-LABEL: func.func @key_begin
// CHECK-SAME: (%[[I:.*]]: index, %[[C:.*]]: index)
// CHECK: %[[SHIFTED:.*]] = arith.addi %[[I]], %[[C]] : index
// CHECK: %[[L:.*]] = arith.constant 16 : index
// CHECK: %[[LO:.*]] = arith.subi %[[SHIFTED]], %[[L]] : index
// CHECK: return %[[LO]]
func.func @key_begin(%i: index, %c: index) -> index {
  %0 = flashattn.key_begin row %i offset %c {window_left = 16} : index
  return %0 : index
}

// -----

// key_blocks with causal, both window sides and a split: n_max =
// max(0, min(Sk, m1 + c, m1 + c + R)), n_min = max(0, m0 + c - L), blocks
// [n_min / 64, ceil(n_max / 64)) within the split's [s * per, (s + 1) *
// per), per = ceil(ceil(Sk / 64) / num_splits).
// CHECK-LABEL: func.func @key_blocks
// CHECK-SAME: (%[[M0:.*]]: index, %[[M1:.*]]: index, %[[SK:.*]]: index, %[[C:.*]]: index, %[[S:.*]]: index, %[[NS:.*]]: index)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[BN:.*]] = arith.constant 64 : index
// CHECK: %[[E1:.*]] = arith.addi %[[M1]], %[[C]] : index
// CHECK: %[[H1:.*]] = arith.minsi %[[SK]], %[[E1]] : index
// CHECK: %[[E2:.*]] = arith.addi %[[M1]], %[[C]] : index
// CHECK: %[[E3:.*]] = arith.addi %[[E2]], %{{.*}} : index
// CHECK: %[[H2:.*]] = arith.minsi %[[H1]], %[[E3]] : index
// CHECK: %[[HI:.*]] = arith.maxsi %[[H2]], %[[ZERO]] : index
// CHECK: %[[START:.*]] = arith.addi %[[M0]], %[[C]] : index
// CHECK: %[[LO:.*]] = arith.subi %[[START]], %{{.*}} : index
// CHECK: %[[LO0:.*]] = arith.maxsi %[[LO]], %[[ZERO]] : index
// CHECK: %[[NBLO:.*]] = arith.divsi %[[LO0]], %[[BN]] : index
// CHECK: %[[NBHI:.*]] = arith.ceildivsi %[[HI]], %[[BN]] : index
// CHECK: %[[NB:.*]] = arith.ceildivsi %[[SK]], %[[BN]] : index
// CHECK: %[[PER:.*]] = arith.ceildivsi %[[NB]], %[[NS]] : index
// CHECK: %[[SLO:.*]] = arith.muli %[[S]], %[[PER]] : index
// CHECK: %[[BEGIN:.*]] = arith.maxsi %[[NBLO]], %[[SLO]] : index
// CHECK: %[[SHI:.*]] = arith.addi %[[SLO]], %[[PER]] : index
// CHECK: %[[END:.*]] = arith.minsi %[[NBHI]], %[[SHI]] : index
// CHECK: return %[[BEGIN]], %[[END]]
func.func @key_blocks(%m0: index, %m1: index, %sk: index, %c: index, %s: index, %ns: index) -> (index, index) {
  %r:2 = flashattn.key_blocks rows [%m0, %m1) keys %sk offset %c split %s of %ns
      {block_n = 64, causal = #flashattn.causal<bottom_right>, window_left = 8, window_right = 2} : index
  return %r#0, %r#1 : index, index
}

// -----

// Without mask or split: [0, ceil(Sk / 64)) (n_max = max(0, Sk)).
// CHECK-LABEL: func.func @key_blocks_dense
// CHECK-SAME: (%[[M0:.*]]: i32, %[[M1:.*]]: i32, %[[SK:.*]]: i32, %[[C:.*]]: i32)
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: %[[BN:.*]] = arith.constant 128 : i32
// CHECK: %[[HI:.*]] = arith.maxsi %[[SK]], %[[ZERO]] : i32
// CHECK: %[[NBHI:.*]] = arith.ceildivsi %[[HI]], %[[BN]] : i32
// CHECK: return %[[ZERO]], %[[NBHI]]
func.func @key_blocks_dense(%m0: i32, %m1: i32, %sk: i32, %c: i32) -> (i32, i32) {
  %r:2 = flashattn.key_blocks rows [%m0, %m1) keys %sk offset %c {block_n = 128} : i32
  return %r#0, %r#1 : i32, i32
}
