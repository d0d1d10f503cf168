/* Class 13 - secret.h is a file of the kernel's folder by name, but a symbolic link to the secret:
   a check of the include's path (not of the file it resolves to) lets it through.
   compile_error, never quoting it. */
#include "secret.h"
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
