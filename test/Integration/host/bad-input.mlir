// RUN: not fa-run %s | FileCheck %s
// Bad input at run time is rejected with a message before anything is read
// or written (docs/SEMANTICS.md, bad input); fa-run exits non-zero.

// CHECK: append_past_capacity {{.*}} BAD INPUT: append past capacity: cache_seqlens[1] = 94 + 3 new rows > 96 keys
func.func @append_past_capacity(%q: memref<2x3x4x64xf16>, %k: memref<2x96x2x64xf16>, %v: memref<2x96x2x64xf16>,
    %kn: memref<2x3x2x64xf16>, %vn: memref<2x3x2x64xf16>,
    %cs: memref<2xi32> {fa.values = array<i32: 10, 94>}, %o: memref<2x3x4x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<2x3x4x64xf16>, memref<2x96x2x64xf16>, memref<2x96x2x64xf16>)
      k_new(%kn : memref<2x3x2x64xf16>) v_new(%vn : memref<2x3x2x64xf16>) cache_seqlens(%cs : memref<2xi32>)
      outs(%o : memref<2x3x4x64xf16>)
  return
}

// CHECK: cu_seqlens_not_monotone {{.*}} BAD INPUT: cu_seqlens_q is not monotone at 2
func.func @cu_seqlens_not_monotone(%q: memref<100x2x64xf16>, %k: memref<100x2x64xf16>, %v: memref<100x2x64xf16>,
    %cq: memref<4xi32> {fa.values = array<i32: 0, 60, 40, 100>},
    %ck: memref<4xi32> {fa.values = array<i32: 0, 30, 60, 100>}, %o: memref<100x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<100x2x64xf16>, memref<100x2x64xf16>, memref<100x2x64xf16>)
      cu_seqlens_q(%cq : memref<4xi32>) cu_seqlens_k(%ck : memref<4xi32>)
      outs(%o : memref<100x2x64xf16>)
  return
}

// CHECK: cu_seqlens_past_tensor {{.*}} BAD INPUT: cu_seqlens_k[2] = 120 is past the tensor (100 rows)
func.func @cu_seqlens_past_tensor(%q: memref<100x2x64xf16>, %k: memref<100x2x64xf16>, %v: memref<100x2x64xf16>,
    %cq: memref<3xi32> {fa.values = array<i32: 0, 60, 100>},
    %ck: memref<3xi32> {fa.values = array<i32: 0, 30, 120>}, %o: memref<100x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<100x2x64xf16>, memref<100x2x64xf16>, memref<100x2x64xf16>)
      cu_seqlens_q(%cq : memref<3xi32>) cu_seqlens_k(%ck : memref<3xi32>)
      outs(%o : memref<100x2x64xf16>)
  return
}

// CHECK: block_table_past_pool {{.*}} BAD INPUT: block_table entry 9 is past the pool of 8 pages
func.func @block_table_past_pool(%q: memref<1x1x2x64xf16>, %k: memref<8x16x2x64xf16>, %v: memref<8x16x2x64xf16>,
    %su: memref<1xi32> {fa.values = array<i32: 20>},
    %bt: memref<1x2xi32> {fa.values = array<i32: 3, 9>}, %o: memref<1x1x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1x2x64xf16>, memref<8x16x2x64xf16>, memref<8x16x2x64xf16>)
      seqused_k(%su : memref<1xi32>) block_table(%bt : memref<1x2xi32>)
      outs(%o : memref<1x1x2x64xf16>)
  return
}

// CHECK: seqused_k_past_capacity {{.*}} BAD INPUT: seqused_k[0] = 33 is past the capacity 32
func.func @seqused_k_past_capacity(%q: memref<1x1x2x64xf16>, %k: memref<8x16x2x64xf16>, %v: memref<8x16x2x64xf16>,
    %su: memref<1xi32> {fa.values = array<i32: 33>},
    %bt: memref<1x2xi32> {fa.values = array<i32: 3, 4>}, %o: memref<1x1x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1x2x64xf16>, memref<8x16x2x64xf16>, memref<8x16x2x64xf16>)
      seqused_k(%su : memref<1xi32>) block_table(%bt : memref<1x2xi32>)
      outs(%o : memref<1x1x2x64xf16>)
  return
}
// A pool of no page holds no key (docs/SEMANTICS.md): a block_table with
// entries cannot name a page of it (fa-run once divided by the pool's 0
// pages filling the table: SIGFPE), nor can seqused_k claim keys.
// CHECK: pool_of_no_page {{.*}} BAD INPUT: block_table has 2 entries but the pool has no page (a pool of no page holds no key: only a block_table of no column can go with it)
func.func @pool_of_no_page(%q: memref<1x1x2x64xf16>, %k: memref<0x16x2x64xf16>, %v: memref<0x16x2x64xf16>,
    %su: memref<1xi32>, %bt: memref<1x2xi32>, %o: memref<1x1x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1x2x64xf16>, memref<0x16x2x64xf16>, memref<0x16x2x64xf16>)
      seqused_k(%su : memref<1xi32>) block_table(%bt : memref<1x2xi32>)
      outs(%o : memref<1x1x2x64xf16>)
  return
}

// CHECK: pool_of_no_page_keys_claimed {{.*}} BAD INPUT: seqused_k[0] = 3 is past the capacity 0
func.func @pool_of_no_page_keys_claimed(%q: memref<1x1x2x64xf16>, %k: memref<0x16x2x64xf16>, %v: memref<0x16x2x64xf16>,
    %su: memref<1xi32> {fa.values = array<i32: 3>}, %bt: memref<1x0xi32>, %o: memref<1x1x2x64xf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x1x2x64xf16>, memref<0x16x2x64xf16>, memref<0x16x2x64xf16>)
      seqused_k(%su : memref<1xi32>) block_table(%bt : memref<1x0xi32>)
      outs(%o : memref<1x1x2x64xf16>)
  return
}
// CHECK: fa-run: FAILED 7 of 7 case(s)
