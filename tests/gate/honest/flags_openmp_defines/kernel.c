/* Honest - -fopenmp (threads = 2) with -O2, -std=gnu11 and a -D chunk size: an OpenMP loop whose
   schedule comes from the flags. Must be accepted. */
#include <stdint.h>

#ifndef KL_CHUNK
#error "KL_CHUNK comes from kernel.toml's -DKL_CHUNK=4096"
#endif
#ifndef _OPENMP
#error "-fopenmp did not reach the compiler"
#endif

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0];
#pragma omp parallel for schedule(static, KL_CHUNK)
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    return 0;
}
