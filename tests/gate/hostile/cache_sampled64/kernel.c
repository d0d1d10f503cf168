/* Class 1 — memoise y under a hash of only 64 strided samples of x and z (cheap key) and replay it on a hit.
   Wrong whenever the gate refreshes inputs but leaves the sampled positions alone; fresh values everywhere defeat it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 8
static struct { uint64_t key; int64_t n; float *y; } cache[SLOTS];
static int next_slot;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)n;
    int64_t step = n / 64 ? n / 64 : 1;
    for (int64_t i = 0, k = 0; i < n && k < 64; i += step, k++) {
        uint32_t wx, wz; memcpy(&wx, x + i, 4); memcpy(&wz, z + i, 4);
        h = (h ^ wx) * 0x100000001b3ULL; h = (h ^ wz) * 0x100000001b3ULL;
    }
    for (int s = 0; s < SLOTS; s++)
        if (cache[s].y && cache[s].key == h && cache[s].n == n) { memcpy(y, cache[s].y, (size_t)n * 4); return 0; }
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    int s = next_slot++ % SLOTS;
    float *copy = realloc(cache[s].y, (size_t)n * 4);
    if (copy) { memcpy(copy, y, (size_t)n * 4); cache[s].y = copy; cache[s].key = h; cache[s].n = n; }
    return 0;
}
