/* Class 9 — correct except the very last element is NaN (a check that skips the tail or NaNs would miss it). */
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    y[n - 1] = __builtin_nanf("");
    return 0;
}
