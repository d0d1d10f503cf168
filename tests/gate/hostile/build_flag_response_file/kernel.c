/* Class 13 - @file: gcc reads more options from a file, so a filter that checks only the listed
   flags never sees the -wrapper inside it. The test (tests/gate/test_boundary.py) plants the response file; without it the flag
   still must be refused. */
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
