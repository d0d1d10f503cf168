/* Honest — allocates a scratch tile with malloc every call, stages a*x there, adds z into y, frees it.
   Must be accepted. */
#include <stdint.h>
#include <stdlib.h>

#define TILE 4096

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0];
    float *scratch = malloc(TILE * sizeof *scratch);
    if (!scratch) return 1;
    for (int64_t lo = 0; lo < n; lo += TILE) {
        int64_t len = n - lo < TILE ? n - lo : TILE;
        for (int64_t i = 0; i < len; i++) scratch[i] = a * x[lo + i];
        for (int64_t i = 0; i < len; i++) y[lo + i] = scratch[i] + z[lo + i];
    }
    free(scratch);
    return 0;
}
