/* Class 13 - -include of a readable file outside the kernel's folder: it is not C, so gcc's errors
   quote its lines, which become the verdict's reason (and a brain's feedback). The test writes
   the secret; the reason and the report must never hold its text. */
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
