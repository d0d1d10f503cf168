/* Honest — y = fmaf(a, x, z): one rounding instead of two, so results differ from a*x+z in the last bit. The gate
   compares with a tolerance against a float64 reference, so this must be accepted. */
#include <math.h>
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = fmaf(a, x[i], z[i]);
    return 0;
}
