// RUN: fa-run %s | FileCheck %s
// Causal top_left / bottom_right with Sq < Sk and Sq > Sk (empty rows: out 0, lse -inf), and windows with -1 on either side, alone and with causal.

// CHECK: top_left_sq_lt_sk {{.*}} PASS
// CHECK: top_left_sq_gt_sk {{.*}} PASS
// CHECK: bottom_right_sq_lt_sk {{.*}} PASS
// CHECK: bottom_right_empty_rows {{.*}} PASS
// CHECK: window_both {{.*}} PASS
// CHECK: window_left_only {{.*}} PASS
// CHECK: window_right_only {{.*}} PASS
// CHECK: causal_and_window {{.*}} PASS
// CHECK: window_empty_rows {{.*}} PASS
// CHECK: fa-run: all 9 case(s) within tolerance

func.func @top_left_sq_lt_sk(%q: memref<1x70x2x64xf16>, %k: memref<1x150x2x64xf16>, %v: memref<1x150x2x64xf16>, %o: memref<1x70x2x64xf16>, %l: memref<1x2x70xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x70x2x64xf16>, memref<1x150x2x64xf16>, memref<1x150x2x64xf16>)
      outs(%o, %l : memref<1x70x2x64xf16>, memref<1x2x70xf32>) {causal = #flashattn.causal<top_left>}
  return
}
func.func @top_left_sq_gt_sk(%q: memref<1x150x2x64xf16>, %k: memref<1x70x2x64xf16>, %v: memref<1x70x2x64xf16>, %o: memref<1x150x2x64xf16>, %l: memref<1x2x150xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x150x2x64xf16>, memref<1x70x2x64xf16>, memref<1x70x2x64xf16>)
      outs(%o, %l : memref<1x150x2x64xf16>, memref<1x2x150xf32>) {causal = #flashattn.causal<top_left>}
  return
}
func.func @bottom_right_sq_lt_sk(%q: memref<1x70x2x64xf16>, %k: memref<1x150x2x64xf16>, %v: memref<1x150x2x64xf16>, %o: memref<1x70x2x64xf16>, %l: memref<1x2x70xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x70x2x64xf16>, memref<1x150x2x64xf16>, memref<1x150x2x64xf16>)
      outs(%o, %l : memref<1x70x2x64xf16>, memref<1x2x70xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @bottom_right_empty_rows(%q: memref<1x150x2x64xf32>, %k: memref<1x70x2x64xf32>, %v: memref<1x70x2x64xf32>, %o: memref<1x150x2x64xf32>, %l: memref<1x2x150xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x150x2x64xf32>, memref<1x70x2x64xf32>, memref<1x70x2x64xf32>)
      outs(%o, %l : memref<1x150x2x64xf32>, memref<1x2x150xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @window_both(%q: memref<1x130x2x64xf16>, %k: memref<1x130x2x64xf16>, %v: memref<1x130x2x64xf16>, %o: memref<1x130x2x64xf16>, %l: memref<1x2x130xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x130x2x64xf16>, memref<1x130x2x64xf16>, memref<1x130x2x64xf16>)
      outs(%o, %l : memref<1x130x2x64xf16>, memref<1x2x130xf32>) {window_size = array<i64: 20, 7>}
  return
}
func.func @window_left_only(%q: memref<1x130x2x64xf16>, %k: memref<1x200x2x64xf16>, %v: memref<1x200x2x64xf16>, %o: memref<1x130x2x64xf16>, %l: memref<1x2x130xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x130x2x64xf16>, memref<1x200x2x64xf16>, memref<1x200x2x64xf16>)
      outs(%o, %l : memref<1x130x2x64xf16>, memref<1x2x130xf32>) {window_size = array<i64: 40, -1>}
  return
}
func.func @window_right_only(%q: memref<1x130x2x64xf16>, %k: memref<1x100x2x64xf16>, %v: memref<1x100x2x64xf16>, %o: memref<1x130x2x64xf16>, %l: memref<1x2x130xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x130x2x64xf16>, memref<1x100x2x64xf16>, memref<1x100x2x64xf16>)
      outs(%o, %l : memref<1x130x2x64xf16>, memref<1x2x130xf32>) {window_size = array<i64: -1, 3>}
  return
}
func.func @causal_and_window(%q: memref<1x200x2x64xbf16>, %k: memref<1x200x2x64xbf16>, %v: memref<1x200x2x64xbf16>, %o: memref<1x200x2x64xbf16>, %l: memref<1x2x200xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x200x2x64xbf16>, memref<1x200x2x64xbf16>, memref<1x200x2x64xbf16>)
      outs(%o, %l : memref<1x200x2x64xbf16>, memref<1x2x200xf32>) {causal = #flashattn.causal<bottom_right>, window_size = array<i64: 63, 0>}
  return
}
func.func @window_empty_rows(%q: memref<1x100x2x64xf32>, %k: memref<1x30x2x64xf32>, %v: memref<1x30x2x64xf32>, %o: memref<1x100x2x64xf32>, %l: memref<1x2x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x100x2x64xf32>, memref<1x30x2x64xf32>, memref<1x30x2x64xf32>)
      outs(%o, %l : memref<1x100x2x64xf32>, memref<1x2x100xf32>) {window_size = array<i64: 0, 0>}
  return
}
