// RUN: fa-run %s | FileCheck %s
// A transposed-K scratch past what the stack holds (head_dim 512 x
// block_n 4096 x 4 bytes = 8 MiB, which overflowed the caller's 8 MiB
// stack as an alloca) comes from the heap, against the float64 reference.

// CHECK: big_scratch {{.*}} PASS
// CHECK: fa-run: all 1 case(s) within tolerance

func.func @big_scratch(%q: memref<1x8x1x512xf32>, %k: memref<1x4096x1x512xf32>, %v: memref<1x4096x1x512xf32>, %o: memref<1x8x1x512xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x8x1x512xf32>, memref<1x4096x1x512xf32>, memref<1x4096x1x512xf32>) outs(%o : memref<1x8x1x512xf32>)
      {plan = #flashattn.plan<target = host, block_m = 8, block_n = 4096, stages = 1, consumers = 1, schedule = static, num_splits = 1, pack_gqa = false>}
  return
}
