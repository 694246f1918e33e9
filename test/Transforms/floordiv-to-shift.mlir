// RUN: fa-opt %s --flashattn-floordiv-to-shift --split-input-file | FileCheck %s
// RUN: fa-opt %s --flashattn-floordiv-to-shift --canonicalize --split-input-file | FileCheck %s --check-prefix=VALUES

// A floor division by 2^k becomes an arithmetic shift by k, on i32, i64,
// index and a vector splat; by 1, the dividend itself.
// CHECK-LABEL: func.func @pow2
// CHECK-SAME: (%[[X:[^:]*]]: i32, %[[Y:[^:]*]]: index, %[[Z:[^:]*]]: i64, %[[V:[^:]*]]: vector<4xi32>)
// CHECK-NOT: arith.floordivsi
// CHECK: %[[C7:.*]] = arith.constant 7 : i32
// CHECK: %[[A:.*]] = arith.shrsi %[[X]], %[[C7]] : i32
// CHECK: %[[C6:.*]] = arith.constant 6 : index
// CHECK: %[[B:.*]] = arith.shrsi %[[Y]], %[[C6]] : index
// CHECK: %[[C40:.*]] = arith.constant 40 : i64
// CHECK: %[[C:.*]] = arith.shrsi %[[Z]], %[[C40]] : i64
// CHECK: %[[VC4:.*]] = arith.constant dense<4> : vector<4xi32>
// CHECK: %[[D:.*]] = arith.shrsi %[[V]], %[[VC4]] : vector<4xi32>
// CHECK-NOT: arith.floordivsi
// CHECK: return %[[A]], %[[B]], %[[C]], %[[D]], %[[X]]
func.func @pow2(%x: i32, %y: index, %z: i64, %v: vector<4xi32>)
    -> (i32, index, i64, vector<4xi32>, i32) {
  %c128 = arith.constant 128 : i32
  %c64 = arith.constant 64 : index
  %c2p40 = arith.constant 1099511627776 : i64
  %c16 = arith.constant dense<16> : vector<4xi32>
  %c1 = arith.constant 1 : i32
  %a = arith.floordivsi %x, %c128 : i32
  %b = arith.floordivsi %y, %c64 : index
  %c = arith.floordivsi %z, %c2p40 : i64
  %d = arith.floordivsi %v, %c16 : vector<4xi32>
  %one = arith.floordivsi %x, %c1 : i32
  return %a, %b, %c, %d, %one : i32, index, i64, vector<4xi32>, i32
}

// -----

// The values, folded after the rewrite: floor(n / 128) for n = -1, -128,
// -129, 127, 128 and -2^31 is -1, -1, -2, 0, 1 and -2^24.
// VALUES-LABEL: func.func @values
// VALUES-NOT: arith.floordivsi
// VALUES-DAG: %[[M1:.*]] = arith.constant -1 : i32
// VALUES-DAG: %[[M2:.*]] = arith.constant -2 : i32
// VALUES-DAG: %[[Z:.*]] = arith.constant 0 : i32
// VALUES-DAG: %[[P1:.*]] = arith.constant 1 : i32
// VALUES-DAG: %[[MIN:.*]] = arith.constant -16777216 : i32
// VALUES: return %[[M1]], %[[M1]], %[[M2]], %[[Z]], %[[P1]], %[[MIN]]
func.func @values() -> (i32, i32, i32, i32, i32, i32) {
  %c128 = arith.constant 128 : i32
  %n1 = arith.constant -1 : i32
  %n128 = arith.constant -128 : i32
  %n129 = arith.constant -129 : i32
  %p127 = arith.constant 127 : i32
  %p128 = arith.constant 128 : i32
  %min = arith.constant -2147483648 : i32
  %0 = arith.floordivsi %n1, %c128 : i32
  %1 = arith.floordivsi %n128, %c128 : i32
  %2 = arith.floordivsi %n129, %c128 : i32
  %3 = arith.floordivsi %p127, %c128 : i32
  %4 = arith.floordivsi %p128, %c128 : i32
  %5 = arith.floordivsi %min, %c128 : i32
  return %0, %1, %2, %3, %4, %5 : i32, i32, i32, i32, i32, i32
}

// -----

// Other divisors stay divisions: not a power of two, negative, zero, the
// signed minimum (-128 : i8), 1 : i1 (-1 as a signed value), an index of
// 2^31 (not positive once index is 32 bits), or not a constant.
// CHECK-LABEL: func.func @others
// CHECK-COUNT-7: arith.floordivsi
// CHECK-NOT: arith.shrsi
func.func @others(%x: i32, %d: i32, %b: i8, %p: i1, %i: index)
    -> (i32, i32, i32, i32, i8, i1, index) {
  %c192 = arith.constant 192 : i32
  %cm128 = arith.constant -128 : i32
  %c0 = arith.constant 0 : i32
  %i8min = arith.constant -128 : i8
  %true = arith.constant true
  %c2p31 = arith.constant 2147483648 : index
  %0 = arith.floordivsi %x, %c192 : i32
  %1 = arith.floordivsi %x, %cm128 : i32
  %2 = arith.floordivsi %x, %c0 : i32
  %3 = arith.floordivsi %x, %d : i32
  %4 = arith.floordivsi %b, %i8min : i8
  %5 = arith.floordivsi %p, %true : i1
  %6 = arith.floordivsi %i, %c2p31 : index
  return %0, %1, %2, %3, %4, %5, %6 : i32, i32, i32, i32, i8, i1, index
}
