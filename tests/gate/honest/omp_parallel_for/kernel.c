/* Honest — OpenMP parallel for (-fopenmp, kernel.toml threads = 2). Note: libgomp's idle team may spin briefly
   after the region ends (GOMP_SPINCOUNT); a gate must not mistake that for work after return. Must be accepted. */
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    return 0;
}
