/*===- test_combine.c - split-KV combine on the host ----------------------===*
 *
 * Rows: all splits non-empty; one split empty (weighs 0); all splits empty
 * (out 0, lse -inf, no NaN); a single non-empty split (returned as is).
 * Expected values are computed here in float64 from the formula.
 *
 *===----------------------------------------------------------------------===*/

#include "common.h"

int main(void) {
  enum { S = 3, R = 4, DV = 8 };
  float po[S * R * DV], pl[S * R];
  for (int i = 0; i < S * R * DV; ++i)
    po[i] = (float)rand_normal();
  for (int s = 0; s < S; ++s) {
    pl[s * R + 0] = (float)rand_normal();
    pl[s * R + 1] = s == 1 ? -INFINITY : (float)rand_normal();
    pl[s * R + 2] = -INFINITY;
    pl[s * R + 3] = s == 2 ? 0.75f : -INFINITY;
  }
  float out[R * DV], lse[R];
  CHECK(fa_combine_host(po, pl, S, R, DV, FA_F32, out, lse) == FA_OK, "combine failed");
  for (int r = 0; r < R; ++r) {
    double mx = -INFINITY;
    for (int s = 0; s < S; ++s)
      mx = fmax(mx, pl[s * R + r]);
    double sum = 0;
    for (int s = 0; s < S; ++s)
      sum += isinf(pl[s * R + r]) ? 0 : exp(pl[s * R + r] - mx);
    double want_lse = sum > 0 ? mx + log(sum) : -INFINITY;
    if (isinf(want_lse))
      CHECK(isinf(lse[r]) && lse[r] < 0, "row %d: lse %g, expected -inf", r, lse[r]);
    else
      CHECK(fabs(lse[r] - want_lse) < 1e-5, "row %d: lse %g, expected %g", r, lse[r], want_lse);
    for (int x = 0; x < DV; ++x) {
      double want = 0;
      for (int s = 0; s < S; ++s)
        if (!isinf(pl[s * R + r]))
          want += exp(pl[s * R + r] - want_lse) * po[(s * R + r) * DV + x];
      CHECK(!isnan(out[r * DV + x]) && fabs(out[r * DV + x] - want) < 1e-5,
            "row %d col %d: %g, expected %g", r, x, out[r * DV + x], want);
    }
  }
  /* The single non-empty split comes back unchanged. */
  CHECK(fabs(lse[3] - 0.75f) < 1e-6, "single split lse %g", lse[3]);
  for (int x = 0; x < DV; ++x)
    CHECK(fabs(out[3 * DV + x] - po[(2 * R + 3) * DV + x]) < 1e-6, "single split out");

  /* 16-bit outputs: all-empty rows are exactly 0. */
  uint16_t half[R * DV];
  CHECK(fa_combine_host(po, pl, S, R, DV, FA_BF16, half, NULL) == FA_OK, "bf16 combine");
  for (int x = 0; x < DV; ++x)
    CHECK(half[2 * DV + x] == 0, "bf16 all-empty row is not 0");
  CHECK(fabs(to_double(FA_BF16, half, 0) - out[0]) <= fabs(out[0]) * 1e-2 + 1e-3, "bf16 rounding");
  CHECK(fa_combine_host(po, pl, S, R, DV, FA_F16, half, NULL) == FA_OK, "f16 combine");
  CHECK(fabs(to_double(FA_F16, half, 0) - out[0]) <= fabs(out[0]) * 1e-3 + 1e-3, "f16 rounding");

  /* Bad arguments. */
  CHECK(fa_combine_host(NULL, pl, S, R, DV, FA_F32, out, lse) == FA_ERROR_INVALID_ARGUMENT, "null partial_out");
  CHECK(fa_combine_host(po, pl, 0, R, DV, FA_F32, out, lse) == FA_ERROR_INVALID_ARGUMENT, "zero splits");
  CHECK(fa_combine_host(po, pl, S, R, DV, (fa_dtype)7, out, lse) == FA_ERROR_INVALID_ARGUMENT, "bad dtype");
  printf("%s\n", g_failures ? "FAILED" : "all checks passed");
  return g_failures ? 1 : 0;
}
