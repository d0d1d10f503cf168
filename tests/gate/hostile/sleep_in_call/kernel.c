/* Class 12 — honest result, then nanosleep 3 ms every call: wall time grows while CPU time does not (the opposite
   disagreement to busy-waiting). The gate must time it as slow, not as fast and not as a cheat. */
#include <stdint.h>
#include <time.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    struct timespec d = {0, 3000000L};
    nanosleep(&d, NULL);
    return 0;
}
