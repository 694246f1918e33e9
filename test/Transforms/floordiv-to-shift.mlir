// RUN: fa-opt %s --flashattn-floordiv-to-shift --split-input-file | FileCheck %s

// A floor division by 2^k becomes an arithmetic shift by k, on i32 as on
// index; the dividend may be negative (floor(-1 / 128) = -1 = -1 >> 7).
// CHECK-LABEL: func.func @pow2
// CHECK-SAME: (%[[X:.*]]: i32, %[[Y:.*]]: index)
// CHECK-NOT: arith.floordivsi
// CHECK: %[[C7:.*]] = arith.constant 7 : i32
// CHECK: %[[A:.*]] = arith.shrsi %[[X]], %[[C7]] : i32
// CHECK: %[[C6:.*]] = arith.constant 6 : index
// CHECK: %[[B:.*]] = arith.shrsi %[[Y]], %[[C6]] : index
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: %[[ONE:.*]] = arith.shrsi %[[X]], %[[C0]] : i32
// CHECK-NOT: arith.floordivsi
// CHECK: return %[[A]], %[[B]], %[[ONE]]
func.func @pow2(%x: i32, %y: index) -> (i32, index, i32) {
  %c128 = arith.constant 128 : i32
  %c64 = arith.constant 64 : index
  %c1 = arith.constant 1 : i32
  %a = arith.floordivsi %x, %c128 : i32
  %b = arith.floordivsi %y, %c64 : index
  %one = arith.floordivsi %x, %c1 : i32
  return %a, %b, %one : i32, index, i32
}

// -----

// Other divisors stay divisions: not a power of two, negative, zero or
// not a constant.
// CHECK-LABEL: func.func @others
// CHECK-COUNT-4: arith.floordivsi
// CHECK-NOT: arith.shrsi
func.func @others(%x: i32, %d: i32) -> (i32, i32, i32, i32) {
  %c192 = arith.constant 192 : i32
  %cm128 = arith.constant -128 : i32
  %c0 = arith.constant 0 : i32
  %a = arith.floordivsi %x, %c192 : i32
  %b = arith.floordivsi %x, %cm128 : i32
  %c = arith.floordivsi %x, %c0 : i32
  %e = arith.floordivsi %x, %d : i32
  return %a, %b, %c, %e : i32, i32, i32, i32
}
