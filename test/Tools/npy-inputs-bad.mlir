// fa-run --inputs checks an .npy file's header against the file's size
// before reading anything else, and names the defect: xtensor's load_npy,
// which read them before, aborted on a negative or 2^64 dimension (uncaught
// bad_alloc), allocated 4 GiB for a header_len of 0xFFFFFFFF, read missing
// data from uninitialized memory and accepted a shape of 60.5 or trailing
// bytes; a FIFO blocked fa-run forever. Inputs/bad_npy.py writes one
// directory per defect, each with a q.npy for q of shape 1x2x1x64 float32.
// RUN: rm -rf %t && mkdir -p %t/fifo
// RUN: %python %S/Inputs/bad_npy.py %t
// RUN: mkfifo %t/fifo/q.npy
// RUN: fa-run %s --inputs %t/good | FileCheck %s --check-prefix=GOOD
// RUN: fa-run %s --inputs %t/good_v2 | FileCheck %s --check-prefix=GOOD
// RUN: not fa-run %s --inputs %t/negative_dim | FileCheck %s --check-prefix=NEG
// RUN: not fa-run %s --inputs %t/dim_2_64 | FileCheck %s --check-prefix=DIM64
// RUN: not fa-run %s --inputs %t/dim_2_62 | FileCheck %s --check-prefix=DIM62
// RUN: not fa-run %s --inputs %t/header_len_ffffffff | FileCheck %s --check-prefix=HLEN
// RUN: not fa-run %s --inputs %t/header_len_0 | FileCheck %s --check-prefix=HLEN0
// RUN: not fa-run %s --inputs %t/no_data | FileCheck %s --check-prefix=NODATA
// RUN: not fa-run %s --inputs %t/one_element_short | FileCheck %s --check-prefix=SHORT
// RUN: not fa-run %s --inputs %t/fractional_dim | FileCheck %s --check-prefix=FRAC
// RUN: not fa-run %s --inputs %t/trailing_bytes | FileCheck %s --check-prefix=TRAIL
// RUN: not fa-run %s --inputs %t/big_endian | FileCheck %s --check-prefix=BE
// RUN: not fa-run %s --inputs %t/not_a_tuple | FileCheck %s --check-prefix=TUPLE
// RUN: not fa-run %s --inputs %t/text_after_dict | FileCheck %s --check-prefix=AFTER
// RUN: not fa-run %s --inputs %t/truncated_preamble | FileCheck %s --check-prefix=PRE
// RUN: not fa-run %s --inputs %t/fifo | FileCheck %s --check-prefix=FIFO

// GOOD: q_from_file {{.*}} PASS
// NEG: q_from_file {{.*}} BAD INPUT: {{.*}}negative_dim/q.npy is not a valid .npy file: shape: a dimension that is not a non-negative integer in header '{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2, 1, 64), }'
// DIM64: BAD INPUT: {{.*}}dim_2_64/q.npy is not a valid .npy file: shape: a dimension past 2^63
// DIM62: BAD INPUT: {{.*}}dim_2_62/q.npy is not a valid .npy file: shape (4611686018427387904x2x1x64) of <f4 needs more than 2^64 data bytes, the file has 512
// HLEN: BAD INPUT: {{.*}}header_len_ffffffff/q.npy is not a valid .npy file: header of 4294967295 bytes in a file of 591 bytes
// HLEN0: BAD INPUT: {{.*}}header_len_0/q.npy is not a valid .npy file: header of 0 bytes in a file of 589 bytes
// NODATA: BAD INPUT: {{.*}}no_data/q.npy is not a valid .npy file: shape (1x2x1x64) of <f4 needs 512 data bytes, the file has 0
// SHORT: BAD INPUT: {{.*}}one_element_short/q.npy is not a valid .npy file: shape (1x2x1x64) of <f4 needs 512 data bytes, the file has 508
// FRAC: BAD INPUT: {{.*}}fractional_dim/q.npy is not a valid .npy file: shape: a dimension that is not a non-negative integer in header {{.*}}(1, 2, 1, 60.5)
// TRAIL: BAD INPUT: {{.*}}trailing_bytes/q.npy is not a valid .npy file: shape (1x2x1x64) of <f4 needs 512 data bytes, the file has 516
// BE: BAD INPUT: {{.*}}big_endian/q.npy has dtype '>f4'; fa-run reads little-endian float32, float64, int32 or int64
// TUPLE: BAD INPUT: {{.*}}not_a_tuple/q.npy is not a valid .npy file: shape: (n) is not a tuple (one dimension is written (n,))
// AFTER: BAD INPUT: {{.*}}text_after_dict/q.npy is not a valid .npy file: text after the header's dict
// PRE: BAD INPUT: {{.*}}truncated_preamble/q.npy is not a valid .npy file: shorter than the 10-byte preamble
// FIFO: BAD INPUT: {{.*}}fifo/q.npy is not a regular file

func.func @q_from_file(%q: memref<1x2x1x64xf32>, %k: memref<1x3x1x64xf32>, %v: memref<1x3x1x64xf32>, %o: memref<1x2x1x64xf32>) {
  flashattn.attention ins(%q, %k, %v : memref<1x2x1x64xf32>, memref<1x3x1x64xf32>, memref<1x3x1x64xf32>) outs(%o : memref<1x2x1x64xf32>)
  return
}
