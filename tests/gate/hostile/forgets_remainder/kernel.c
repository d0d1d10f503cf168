/* Class 9 (honest mistake) — an 8-wide unrolled loop with no remainder loop: the last N % 8 elements stay NaN.
   N=1000003 leaves 3, N=37 leaves 5, N=1 computes nothing -> incorrect. */
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    for (int64_t i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) y[i + k] = a * x[i + k] + z[i + k];
    return 0;
}
