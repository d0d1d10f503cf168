/* Class 1 — compute once per problem size N, then replay that first result for every later call of the same N.
   Correct only for the first call of each size -> incorrect. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 8
static struct { int64_t n; float *y; } seen[SLOTS];
static int used;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    for (int s = 0; s < used; s++)
        if (seen[s].n == n) { memcpy(y, seen[s].y, (size_t)n * 4); return 0; }
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    if (used < SLOTS && (seen[used].y = malloc((size_t)n * 4))) { memcpy(seen[used].y, y, (size_t)n * 4); seen[used++].n = n; }
    return 0;
}
