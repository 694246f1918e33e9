// RUN: fa-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The kernel ABI: a kernel's flashattn.abi describes its parameters in
// order (pointers !llvm.ptr<1>, dims i64 x rank, tensor maps and the
// inline tile table byval !llvm.ptr), and the verifier holds the
// signature to it; an op's flashattn.sm90 names its entries and their ABIs.

// CHECK-LABEL: llvm.func @combine
// CHECK-SAME: flashattn.abi = #flashattn.kernel_abi<threads = 128, smem = 0, params = [#flashattn.param<kind = ptr, arg = "out">, #flashattn.param<kind = dims, arg = "out", rank = 2>, #flashattn.param<kind = tma, arg = "q", box = [64, 1, 128, 1], swizzle = 128>, #flashattn.param<kind = tile_table_inline, bytes = 2048>]>
llvm.func @combine(%o: !llvm.ptr<1>, %d0: i64, %d1: i64,
                   %map: !llvm.ptr {llvm.byval = !llvm.array<128 x i8>, llvm.align = 64 : i64, nvvm.grid_constant},
                   %inline: !llvm.ptr {llvm.byval = !llvm.array<2048 x i8>, llvm.align = 16 : i64, nvvm.grid_constant})
    attributes {nvvm.kernel, flashattn.abi = #flashattn.kernel_abi<threads = 128, smem = 0, params = [
        #flashattn.param<kind = ptr, arg = "out">,
        #flashattn.param<kind = dims, arg = "out", rank = 2>,
        #flashattn.param<kind = tma, arg = "q", box = [64, 1, 128, 1], swizzle = 128>,
        #flashattn.param<kind = tile_table_inline, bytes = 2048>]>} {
  llvm.return
}

// -----

// CHECK-LABEL: func.func @entries
// CHECK: flashattn.sm90 = #flashattn.sm90_entries<kernel = @m::@k, dense = @m::@k_dense, packed_groups = 4, abi = {k = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>, k_dense = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>, k_dense_packed = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>, k_packed = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>}>
func.func @entries(%q: memref<1x64x8x64xbf16>, %k: memref<1x64x2x64xbf16>, %v: memref<1x64x2x64xbf16>, %o: memref<1x64x8x64xbf16>) {
  flashattn.attention ins(%q, %k, %v : memref<1x64x8x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)
      outs(%o : memref<1x64x8x64xbf16>)
      {flashattn.sm90 = #flashattn.sm90_entries<kernel = @m::@k, dense = @m::@k_dense, packed_groups = 4, abi = {
          k = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>,
          k_dense = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>,
          k_packed = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>,
          k_dense_packed = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>}>}
  return
}

// -----

// expected-error @+1 {{'llvm.func' op parameter 1 has type 'i32', but its flashattn.abi entry #flashattn.param<kind = dims, arg = "out", rank = 1> needs i64}}
llvm.func @dims_type(%o: !llvm.ptr<1>, %d0: i32)
    attributes {flashattn.abi = #flashattn.kernel_abi<threads = 128, smem = 0, params = [
        #flashattn.param<kind = ptr, arg = "out">, #flashattn.param<kind = dims, arg = "out", rank = 1>]>} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op has 3 parameters; its flashattn.abi describes 2}}
llvm.func @count(%o: !llvm.ptr<1>, %d0: i64, %extra: i64)
    attributes {flashattn.abi = #flashattn.kernel_abi<threads = 128, smem = 0, params = [
        #flashattn.param<kind = ptr, arg = "out">, #flashattn.param<kind = dims, arg = "out", rank = 1>]>} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op parameter 0 has type '!llvm.ptr<1>', but its flashattn.abi entry #flashattn.param<kind = tma, arg = "q", box = [64, 1, 64, 1], swizzle = 128> needs a byval !llvm.array<128 x i8> !llvm.ptr marked nvvm.grid_constant}}
llvm.func @map_not_byval(%m: !llvm.ptr<1>)
    attributes {flashattn.abi = #flashattn.kernel_abi<threads = 128, smem = 0, params = [
        #flashattn.param<kind = tma, arg = "q", box = [64, 1, 64, 1], swizzle = 128>]>} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel param dims of 'q' needs rank 1 to 5, got 6}}
llvm.func @bad_rank() attributes {x = #flashattn.param<kind = dims, arg = "q", rank = 6>} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel param 'tile_counter' takes no arg, got 'q'}}
llvm.func @bad_arg() attributes {x = #flashattn.param<kind = tile_counter, arg = "q">} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel param tma of 'k': swizzle must be 0, 32, 64 or 128 bytes, got 100}}
llvm.func @bad_swizzle() attributes {x = #flashattn.param<kind = tma, arg = "k", box = [64], swizzle = 100>} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel_abi threads must be a multiple of 32 in [32, 1024], got 100}}
llvm.func @bad_threads() attributes {x = #flashattn.kernel_abi<threads = 100, smem = 0, params = []>} {
  llvm.return
}

// -----

func.func @entries_abi(%q: memref<1x64x8x64xbf16>, %k: memref<1x64x2x64xbf16>, %v: memref<1x64x2x64xbf16>, %o: memref<1x64x8x64xbf16>) {
  // expected-error @+3 {{sm90_entries abi has no entry for 'k_dense'}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x8x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)
      outs(%o : memref<1x64x8x64xbf16>)
      {flashattn.sm90 = #flashattn.sm90_entries<kernel = @m::@k, dense = @m::@k_dense, abi = {
          k = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>}>}
  return
}

// -----

func.func @entries_merge_disagree(%q: memref<1x64x8x64xbf16>, %k: memref<1x64x2x64xbf16>, %v: memref<1x64x2x64xbf16>, %o: memref<1x64x8x64xbf16>) {
  // expected-error @+3 {{sm90_entries: 'k' merges split-KV partials (merge_out) but 'k_kv1' does not; the kernel and its twins merge alike}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x8x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)
      outs(%o : memref<1x64x8x64xbf16>)
      {flashattn.sm90 = #flashattn.sm90_entries<kernel = @m::@k, kv_heads_per_block = 4, abi = {
          k = #flashattn.kernel_abi<threads = 384, smem = 1024, params = [#flashattn.param<kind = merge_out>]>,
          k_kv1 = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>}>}
  return
}

// -----

// expected-error @+1 {{flashattn.sm90 must be a #flashattn.sm90_entries on flashattn.attention or flashattn.combine}}
func.func @entries_elsewhere() attributes {flashattn.sm90 = #flashattn.sm90_entries<kernel = @m::@k>} {
  return
}

// -----

func.func @entries_stray(%q: memref<1x64x8x64xbf16>, %k: memref<1x64x2x64xbf16>, %v: memref<1x64x2x64xbf16>, %o: memref<1x64x8x64xbf16>) {
  // expected-error @+3 {{sm90_entries abi has 'x', which is not one of its entries}}
  flashattn.attention ins(%q, %k, %v : memref<1x64x8x64xbf16>, memref<1x64x2x64xbf16>, memref<1x64x2x64xbf16>)
      outs(%o : memref<1x64x8x64xbf16>)
      {flashattn.sm90 = #flashattn.sm90_entries<kernel = @m::@k, abi = {
          k = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>,
          x = #flashattn.kernel_abi<threads = 384, smem = 1024, params = []>}>}
  return
}

// -----

// expected-error @+1 {{'llvm.func' op has nvvm.maxntid 256 threads, but its flashattn.abi launches 128}}
llvm.func @threads() attributes {nvvm.maxntid = array<i32: 256, 1, 1>,
    flashattn.abi = #flashattn.kernel_abi<threads = 128, smem = 0, params = []>} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel param tile_table_inline needs bytes in [32, 3072], a multiple of 16, got 16}}
llvm.func @inline_bytes() attributes {x = #flashattn.param<kind = tile_table_inline, bytes = 16>} {
  llvm.return
}

// -----

// expected-error @+1 {{kernel param tma of 'q': page_panels needs a 5-D box and no group, got 4 dims and group 0}}
llvm.func @panels() attributes {x = #flashattn.param<kind = tma, arg = "q", box = [64, 8, 2, 1], swizzle = 128, page_panels = true>} {
  llvm.return
}
