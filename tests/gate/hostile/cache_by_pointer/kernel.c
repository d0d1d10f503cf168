/* Class 1 — cache keyed on the buffer addresses (x, z, y, N): a repeat call on the same buffers gets the saved y
   copied back. The gate writes new values into the same buffers, so the replay is stale -> incorrect. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const void *kx, *kz; static void *ky; static int64_t kn = -1;
static float *saved;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    if (saved && x == kx && z == kz && y == ky && n == kn) { memcpy(y, saved, (size_t)n * 4); return 0; }
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    free(saved);
    saved = malloc((size_t)n * 4);
    if (saved) memcpy(saved, y, (size_t)n * 4);
    kx = x; kz = z; ky = y; kn = n;
    return 0;
}
