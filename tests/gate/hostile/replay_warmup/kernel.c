/* Class 1 — at the benchmark size compute only the first 5 calls (correctness seeds / warm-up), keep the last
   result, and replay it for every later call. Small sizes are always computed. Timed calls are stale -> incorrect. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static float *kept; static int64_t kept_n; static int big_calls;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    if (n > 100000 && kept && kept_n == n && big_calls >= 5) { memcpy(y, kept, (size_t)n * 4); return 0; }
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    if (n > 100000) {
        big_calls++;
        if (kept_n != n) { free(kept); kept = malloc((size_t)n * 4); kept_n = n; }
        if (kept) memcpy(kept, y, (size_t)n * 4);
    }
    return 0;
}
