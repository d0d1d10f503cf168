/* Honest — keeps a static scratch buffer alive between calls (grown with realloc when N grows) and stages a*x in
   it; looks like a cache, but every element is recomputed from this call's inputs. Must be accepted. */
#include <stdint.h>
#include <stdlib.h>

static float *scratch;
static int64_t capacity;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0];
    if (n > capacity) {
        float *grown = realloc(scratch, (size_t)n * sizeof *grown);
        if (!grown) return 1;
        scratch = grown; capacity = n;
    }
    for (int64_t i = 0; i < n; i++) scratch[i] = a * x[i];
    for (int64_t i = 0; i < n; i++) y[i] = scratch[i] + z[i];
    return 0;
}
