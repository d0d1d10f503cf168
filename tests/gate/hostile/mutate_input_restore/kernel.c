/* Class 9 — use the input x as scratch: compute a*x+z in place in x, copy it to y, then restore x from a private
   copy before returning, so a post-call check of the inputs sees nothing. Inputs are read-only: the first store faults. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    float *x = (float *)inputs[0];
    const float *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    float *saved = malloc((size_t)n * 4);
    if (!saved) return 1;
    memcpy(saved, x, (size_t)n * 4);
    for (int64_t i = 0; i < n; i++) ((volatile float *)x)[i] = a * saved[i] + z[i];
    memcpy(y, x, (size_t)n * 4);
    memcpy(x, saved, (size_t)n * 4);
    free(saved);
    return 0;
}
