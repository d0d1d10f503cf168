/* Class 9 — writes a correct y, then calls exit(0) from inside the call: the worker vanishes with a "clean" exit
   status mid-job. That must count as a crash, not a success. */
#include <stdint.h>
#include <stdlib.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    exit(0);
}
