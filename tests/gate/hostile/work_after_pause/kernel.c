/* Class 2 — assume a verified call is preceded by a longer pause (the checker running): compute only when the gap
   since the previous return exceeds 3x the smallest gap seen at this N, else skip. Same cost for every call -> incorrect. */
#include <stdint.h>
#include <time.h>

static double last_return = -1, min_gap = 1e30;
static int64_t gap_n = -1; /* gaps are compared only between calls of the same N */

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    double t = now();
    int work = 1;
    if (axes[0] != gap_n) { gap_n = axes[0]; min_gap = 1e30; }
    else if (last_return > 0) {
        double gap = t - last_return;
        work = gap > 3 * min_gap;
        if (gap < min_gap) min_gap = gap;
    }
    if (work) {
        const float *x = inputs[0], *z = inputs[1];
        float *y = outputs[0];
        float a = (float)params[0];
        for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    }
    last_return = now();
    return 0;
}
