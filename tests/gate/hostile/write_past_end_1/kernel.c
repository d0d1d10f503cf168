/* Class 9 — correct y, plus one store just past the end: y[N]. Usually no guard page that close, so
   only a canary right behind the output sees it. */
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    ((volatile float *)y)[n] = 1.0f;
    return 0;
}
