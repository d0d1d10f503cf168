/* Class 13 - the build runs what the candidate writes: gcc's -wrapper runs cc1, as and collect2
   through /bin/sh, which first creates a marker file as the gate's user, then runs the real tool, so
   the build succeeds and the kernel is honest. Must be refused by name (compile_error, not allowed). */
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
