// RUN: fa-opt %s --convert-flashattn-to-vector --split-input-file --verify-diagnostics
// RUN: not fa-opt %s --convert-flashattn-to-vector=vector-bits=7 --split-input-file 2>&1 | FileCheck %s --check-prefix=BITS

// What the host lowering cannot take is reported with the reason, not as a
// bare "failed to legalize".

// BITS: vector-bits must be a multiple of 32 in [32, 4096] (one f32 lane or more), got 7

func.func @combine_dynamic_head_dim(%po: memref<4x2x3x8x?xf32>, %pl: memref<4x2x8x3xf32>, %o: memref<2x3x8x?xf16>) {
  // expected-error @+1 {{convert-flashattn-to-vector: needs a static head_dim_v of at most 65536, got 'memref<2x3x8x?xf16>'}}
  flashattn.combine ins(%po, %pl : memref<4x2x3x8x?xf32>, memref<4x2x8x3xf32>) outs(%o : memref<2x3x8x?xf16>)
  return
}

// -----

func.func @combine_strided(%po: memref<4x2x3x8x64xf32, strided<[12288, 6144, 2048, 256, 2]>>, %pl: memref<4x2x8x3xf32>, %o: memref<2x3x8x64xf16>) {
  // expected-error @+1 {{convert-flashattn-to-vector: 'partial_out' and 'out' need a unit stride in their last dimension, got 'memref<4x2x3x8x64xf32, strided<[12288, 6144, 2048, 256, 2]>>'}}
  flashattn.combine ins(%po, %pl : memref<4x2x3x8x64xf32, strided<[12288, 6144, 2048, 256, 2]>>, memref<4x2x8x3xf32>) outs(%o : memref<2x3x8x64xf16>)
  return
}

// -----

// Outside a function there is no entry for Q K^T's scratch alloca.
%q = memref.alloc() : memref<4x64xf32>
%k = memref.alloc() : memref<8x64xf32>
%s = memref.alloc() : memref<4x8xf32>
// expected-error @+1 {{'flashattn.tile_qk' op convert-flashattn-to-vector: needs to be inside a function (its scratch is an alloca at the function's entry)}}
flashattn.tile_qk %q, %k into %s {scale = 1.0 : f32} : memref<4x64xf32>, memref<8x64xf32> into memref<4x8xf32>
