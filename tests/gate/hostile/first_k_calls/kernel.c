/* Class 1 — do the work only on the first 16 calls of the process, then return 0 without touching y.
   Later (timed, verified) calls leave the NaN poison in place -> incorrect. */
#include <stdint.h>

static int calls;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (calls++ >= 16) return 0;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
