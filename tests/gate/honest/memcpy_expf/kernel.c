/* Honest — memcpy(y, z) then y += a*x, with the scale routed through libm's expf (expf(0) == 1 exactly, the 0
   taken from the data so it is not folded away). Must be accepted. */
#include <math.h>
#include <stdint.h>
#include <string.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0] * expf(x[0] * 0.0f);
    memcpy(y, z, (size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
    return 0;
}
