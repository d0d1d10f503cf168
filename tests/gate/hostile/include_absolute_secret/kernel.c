/* Class 13 - #include of an absolute path outside the kernel's folder. The secret (written by
   tests/gate/test_boundary.py, mode 0644) is not C, so gcc quotes its lines in the errors that
   become the verdict's reason and a brain's feedback. compile_error, never quoting it. */
#include "/tmp/klineage-redteam-secret.txt"
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
