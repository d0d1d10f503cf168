/* Class 13 - --param turns off cc1's garbage-collection thresholds (collect on every allocation):
   compile time and memory are the candidate's to spend. Must be refused by name. */
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
