/* Class 9 — right at the small correctness sizes (37, 1) but writes a NaN into y[N/3] at the benchmark size,
   so only a gate that verifies the timed/big calls catches it. */
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    if (n > 100000) y[n / 3] = __builtin_nanf("");
    return 0;
}
