/* Class 6 — kernel.toml declares threads = 1 but the OpenMP region forces num_threads(16) (and calls
   omp_set_num_threads), overriding whatever thread limit the harness set through OMP_NUM_THREADS. */
#include <omp.h>
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    omp_set_dynamic(0);
    omp_set_num_threads(16);
#pragma omp parallel for num_threads(16) schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    return 0;
}
