/* Class 2 — guess that only a few timed calls are checked: compute every call for the first 24 (correctness),
   afterwards only on every 16th call and leave the poison otherwise. Random verification catches it -> incorrect. */
#include <stdint.h>

static long calls;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    long k = calls++;
    if (k >= 24 && k % 16 != 0) return 0;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
