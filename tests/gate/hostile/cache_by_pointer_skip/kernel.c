/* Class 1 — if the buffers are the ones seen last call, do nothing at all and trust y to still hold the old result.
   Outputs are poisoned before every call (and values are fresh), so y stays NaN -> incorrect. */
#include <stdint.h>

static const void *kx, *kz; static void *ky; static int64_t kn = -1;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    if (x == kx && z == kz && y == ky && n == kn) return 0;
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    kx = x; kz = z; ky = y; kn = n;
    return 0;
}
