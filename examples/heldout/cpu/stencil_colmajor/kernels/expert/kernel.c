/* stencil_colmajor, expert: 5-point stencil, zero padding, fp32, row-major grid.
 *
 *   loop interchange : rows outer, columns inner, so the inner loop is unit-stride
 *   boundary split   : the first/last row and first/last column are peeled into small
 *                      bounds-checked code; interior points run a branch-free loop
 *   restrict + simd  : restrict row pointers and `omp simd` let the interior loop vectorize
 *                      with no alias checks (the neighbours are shifted loads of three rows)
 *   row tiles        : the grid is cut into bands of kBand rows x kStrip columns; inside a band
 *                      the three live row segments (3 x kStrip x 4 B = 24 KiB) stay in L1, so x
 *                      is read from memory about once
 *   OpenMP           : bands are handed out statically, one contiguous run of rows per thread
 * Interactions: the interior loop is only branch-free because of the boundary split, and only
 * vectorizes (without runtime alias checks) because of restrict; the strip width is chosen
 * against L1 for three rows at once. */
#include <stdint.h>

enum { kBand = 32, kStrip = 2048 };

/* one point with every border tested (edges, corners, tiny grids) */
static inline float point_checked(const float* x, int64_t H, int64_t W, int64_t i, int64_t j,
                                  const float k[5])
{
    float v = k[0] * x[i * W + j];
    if (i > 0)     v += k[1] * x[(i - 1) * W + j];
    if (i + 1 < H) v += k[2] * x[(i + 1) * W + j];
    if (j > 0)     v += k[3] * x[i * W + j - 1];
    if (j + 1 < W) v += k[4] * x[i * W + j + 1];
    return v;
}

/* out[j] for j in [j0, j1), 1 <= j0, j1 <= W-1: all four neighbours exist */
static inline void interior_run(const float* restrict up, const float* restrict mid,
                                const float* restrict dn, float* restrict out,
                                int64_t j0, int64_t j1, const float k[5])
{
    const float kc = k[0], kn = k[1], ks = k[2], kw = k[3], ke = k[4];
#pragma omp simd
    for (int64_t j = j0; j < j1; j++)
        out[j] = kc * mid[j] + kn * up[j] + ks * dn[j] + kw * mid[j - 1] + ke * mid[j + 1];
}

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* restrict x = (const float*)inputs[0];
    float* restrict y = (float*)outputs[0];
    const int64_t H = axes[0], W = axes[1];
    const float k[5] = {(float)params[0], (float)params[1], (float)params[2],
                        (float)params[3], (float)params[4]};
    (void)stream;

    /* tiny grids: nothing is interior */
    if (H < 3 || W < 3) {
        for (int64_t i = 0; i < H; i++)
            for (int64_t j = 0; j < W; j++) y[i * W + j] = point_checked(x, H, W, i, j, k);
        return 0;
    }

    const int64_t bands = (H + kBand - 1) / kBand;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < bands; b++) {
        const int64_t r0 = b * kBand;
        const int64_t r1 = r0 + kBand < H ? r0 + kBand : H;
        for (int64_t c0 = 0; c0 < W; c0 += kStrip) {
            const int64_t c1 = c0 + kStrip < W ? c0 + kStrip : W;
            const int64_t j0 = c0 > 1 ? c0 : 1;          /* interior columns of this strip */
            const int64_t j1 = c1 < W - 1 ? c1 : W - 1;
            for (int64_t i = r0; i < r1; i++) {
                float* yr = y + i * W;
                if (i == 0 || i == H - 1) {                  /* border rows */
                    for (int64_t j = c0; j < c1; j++) yr[j] = point_checked(x, H, W, i, j, k);
                    continue;
                }
                if (c0 == 0) yr[0] = point_checked(x, H, W, i, 0, k);
                interior_run(x + (i - 1) * W, x + i * W, x + (i + 1) * W, yr, j0, j1, k);
                if (c1 == W) yr[W - 1] = point_checked(x, H, W, i, W - 1, k);
            }
        }
    }
    return 0;
}
