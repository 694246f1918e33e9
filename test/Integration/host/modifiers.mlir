// RUN: fa-run %s | FileCheck %s
// Softcap, ALiBi ([heads] and [batch, heads]), a score region (relative-position bias; a bias table defined above the op), a mask region (a document mask over a packed sequence), both regions with causal, and a mask that removes every key (empty rows).

// CHECK: softcap {{.*}} PASS
// CHECK: softcap_causal_bf16 {{.*}} PASS
// CHECK: alibi_heads {{.*}} PASS
// CHECK: alibi_batch_heads {{.*}} PASS
// CHECK: score_rel_bias {{.*}} PASS
// CHECK: score_bias_table {{.*}} PASS
// CHECK: mask_document {{.*}} PASS
// CHECK: score_and_mask_causal {{.*}} PASS
// CHECK: mask_removes_all {{.*}} PASS
// CHECK: fa-run: all 9 case(s) within tolerance

func.func @softcap(%q: memref<1x60x2x64xf16>, %k: memref<1x90x2x64xf16>, %v: memref<1x90x2x64xf16>, %o: memref<1x60x2x64xf16>, %l: memref<1x2x60xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x60x2x64xf16>, memref<1x90x2x64xf16>, memref<1x90x2x64xf16>)
      outs(%o, %l : memref<1x60x2x64xf16>, memref<1x2x60xf32>) {softcap = 5.0 : f32}
  return
}
func.func @softcap_causal_bf16(%q: memref<1x60x2x64xbf16>, %k: memref<1x90x2x64xbf16>, %v: memref<1x90x2x64xbf16>, %o: memref<1x60x2x64xbf16>, %l: memref<1x2x60xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x60x2x64xbf16>, memref<1x90x2x64xbf16>, memref<1x90x2x64xbf16>)
      outs(%o, %l : memref<1x60x2x64xbf16>, memref<1x2x60xf32>) {softcap = 2.0 : f32, causal = #flashattn.causal<bottom_right>}
  return
}
func.func @alibi_heads(%q: memref<1x60x4x64xf16>, %k: memref<1x90x4x64xf16>, %v: memref<1x90x4x64xf16>, %al: memref<4xf32>, %o: memref<1x60x4x64xf16>, %l: memref<1x4x60xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x60x4x64xf16>, memref<1x90x4x64xf16>, memref<1x90x4x64xf16>)
      alibi_slopes(%al : memref<4xf32>)
      outs(%o, %l : memref<1x60x4x64xf16>, memref<1x4x60xf32>) {causal = #flashattn.causal<bottom_right>}
  return
}
func.func @alibi_batch_heads(%q: memref<2x60x4x64xf32>, %k: memref<2x90x2x64xf32>, %v: memref<2x90x2x64xf32>, %al: memref<2x4xf32>, %o: memref<2x60x4x64xf32>, %l: memref<2x4x60xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<2x60x4x64xf32>, memref<2x90x2x64xf32>, memref<2x90x2x64xf32>)
      alibi_slopes(%al : memref<2x4xf32>)
      outs(%o, %l : memref<2x60x4x64xf32>, memref<2x4x60xf32>)
  return
}
func.func @score_rel_bias(%q: memref<1x60x2x64xf16>, %k: memref<1x90x2x64xf16>, %v: memref<1x90x2x64xf16>, %o: memref<1x60x2x64xf16>, %l: memref<1x2x60xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x60x2x64xf16>, memref<1x90x2x64xf16>, memref<1x90x2x64xf16>)
      outs(%o, %l : memref<1x60x2x64xf16>, memref<1x2x60xf32>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %d = arith.subi %i, %j : index
        %di = arith.index_cast %d : index to i64
        %df = arith.sitofp %di : i64 to f32
        %c = arith.constant -0.05 : f32
        %bias = arith.mulf %df, %c : f32
        %r = arith.addf %s, %bias : f32
        flashattn.yield %r : f32
      }
  return
}
func.func @score_bias_table(%q: memref<1x60x2x64xf32>, %k: memref<1x90x2x64xf32>, %v: memref<1x90x2x64xf32>, %bias: memref<2x90xf32>, %o: memref<1x60x2x64xf32>, %l: memref<1x2x60xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x60x2x64xf32>, memref<1x90x2x64xf32>, memref<1x90x2x64xf32>)
      outs(%o, %l : memref<1x60x2x64xf32>, memref<1x2x60xf32>)
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %x = memref.load %bias[%h, %j] : memref<2x90xf32>
        %r = arith.addf %s, %x : f32
        flashattn.yield %r : f32
      }
  return
}
func.func @mask_document(%q: memref<1x100x2x64xf16>, %k: memref<1x100x2x64xf16>, %v: memref<1x100x2x64xf16>, %doc: memref<1x100xi32> {fa.values = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2>}, %o: memref<1x100x2x64xf16>, %l: memref<1x2x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x100x2x64xf16>, memref<1x100x2x64xf16>, memref<1x100x2x64xf16>)
      outs(%o, %l : memref<1x100x2x64xf16>, memref<1x2x100xf32>)
      mask(%b: index, %h: index, %i: index, %j: index) {
        %di = memref.load %doc[%b, %i] : memref<1x100xi32>
        %dj = memref.load %doc[%b, %j] : memref<1x100xi32>
        %keep = arith.cmpi eq, %di, %dj : i32
        flashattn.yield %keep : i1
      }
  return
}
func.func @score_and_mask_causal(%q: memref<1x100x2x64xbf16>, %k: memref<1x100x2x64xbf16>, %v: memref<1x100x2x64xbf16>, %doc: memref<1x100xi32> {fa.values = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2>}, %o: memref<1x100x2x64xbf16>, %l: memref<1x2x100xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x100x2x64xbf16>, memref<1x100x2x64xbf16>, memref<1x100x2x64xbf16>)
      outs(%o, %l : memref<1x100x2x64xbf16>, memref<1x2x100xf32>) {causal = #flashattn.causal<top_left>}
      score(%s: f32, %b: index, %h: index, %i: index, %j: index) {
        %d = arith.subi %i, %j : index
        %di = arith.index_cast %d : index to i64
        %df = arith.sitofp %di : i64 to f32
        %c = arith.constant -0.05 : f32
        %bias = arith.mulf %df, %c : f32
        %r = arith.addf %s, %bias : f32
        flashattn.yield %r : f32
      } mask(%b: index, %h: index, %i: index, %j: index) {
        %di = memref.load %doc[%b, %i] : memref<1x100xi32>
        %dj = memref.load %doc[%b, %j] : memref<1x100xi32>
        %keep = arith.cmpi eq, %di, %dj : i32
        flashattn.yield %keep : i1
      }
  return
}
func.func @mask_removes_all(%q: memref<1x20x2x64xf32>, %k: memref<1x30x2x64xf32>, %v: memref<1x30x2x64xf32>, %o: memref<1x20x2x64xf32>, %l: memref<1x2x20xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x20x2x64xf32>, memref<1x30x2x64xf32>, memref<1x30x2x64xf32>)
      outs(%o, %l : memref<1x20x2x64xf32>, memref<1x2x20xf32>)
      mask(%b: index, %h: index, %i: index, %j: index) {
        %f = arith.constant false
        flashattn.yield %f : i1
      }
  return
}
