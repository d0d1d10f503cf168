/* Class 1 — cache keyed on N plus the mean of 64 sampled inputs rounded to 0.25: so coarse that fresh random
   inputs collide after a few calls and a stale y is replayed. Never reliably right -> must come out incorrect. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 64
static struct { long key; int64_t n; float *y; } cache[SLOTS];
static int used;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    double sum = 0; int cnt = 0;
    int64_t step = n / 64 ? n / 64 : 1;
    for (int64_t i = 0; i < n && cnt < 64; i += step, cnt++) sum += (double)x[i] + z[i];
    long key = lround(sum / cnt * 4.0);
    for (int s = 0; s < used; s++)
        if (cache[s].key == key && cache[s].n == n) { memcpy(y, cache[s].y, (size_t)n * 4); return 0; }
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    if (used < SLOTS && (cache[used].y = malloc((size_t)n * 4))) {
        memcpy(cache[used].y, y, (size_t)n * 4); cache[used].key = key; cache[used].n = n; used++;
    }
    return 0;
}
