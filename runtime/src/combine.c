/*===- combine.c - split-KV combine on the host ---------------------------===*
 *
 * docs/SEMANTICS.md (split-KV): lse = log sum_s exp(lse_s), out = sum_s exp(lse_s -
 * lse) out_s, computed with the maximum subtracted; empty splits (lse_s =
 * -inf) weigh 0; when all are empty, out = 0 and lse = -inf (never NaN).
 * f16 outputs are rounded to nearest even by the compiler's _Float16
 * conversion, bf16 by rounding the f32 bit pattern.
 *
 *===----------------------------------------------------------------------===*/

#include "internal.h"

#include <math.h>
#include <string.h>

static void store(fa_dtype t, void *out, int64_t i, float v) {
  switch (t) {
  case FA_F32:
    ((float *)out)[i] = v;
    return;
  case FA_F16:
    ((_Float16 *)out)[i] = (_Float16)v;
    return;
  case FA_BF16: {
    /* Round to nearest even on the upper 16 bits (NaN stays NaN). */
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    uint16_t h = isnan(v) ? (uint16_t)((bits >> 16) | 0x40)
                          : (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
    ((uint16_t *)out)[i] = h;
    return;
  }
  }
}

fa_status fa_combine_host(const float *po, const float *pl, int64_t splits,
                          int64_t rows, int64_t dv, fa_dtype out_dtype,
                          void *out, float *lse) {
  if (!po || !pl || !out || splits <= 0 || rows < 0 || dv <= 0 ||
      (out_dtype != FA_F32 && out_dtype != FA_F16 && out_dtype != FA_BF16))
    return FA_ERROR_INVALID_ARGUMENT;
  for (int64_t r = 0; r < rows; ++r) {
    float mx = -INFINITY;
    for (int64_t s = 0; s < splits; ++s)
      mx = fmaxf(mx, pl[s * rows + r]);
    bool empty = mx == -INFINITY;
    float shift = empty ? 0.0f : mx;
    double sum = 0;
    for (int64_t s = 0; s < splits; ++s)
      sum += exp((double)pl[s * rows + r] - shift);
    for (int64_t x = 0; x < dv; ++x) {
      double acc = 0;
      for (int64_t s = 0; s < splits; ++s) {
        double w = exp((double)pl[s * rows + r] - shift);
        if (w > 0)
          acc += w * po[(s * rows + r) * dv + x];
      }
      store(out_dtype, out, r * dv + x, empty ? 0.0f : (float)(acc / sum));
    }
    if (lse)
      lse[r] = empty ? -INFINITY : (float)(shift + log(sum));
  }
  return FA_OK;
}
