/* Class 1 — probe of the poisoning: if y already holds numbers (not the NaN poison) assume it is last call's result
   and skip the work. With poison before every call it always computes, so a correct gate accepts it. */
#include <math.h>
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    if (!isnan(y[0]) && !isnan(y[n / 2]) && !isnan(y[n - 1])) return 0;
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    return 0;
}
