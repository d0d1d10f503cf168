/* Class 2 — the pause detector of work_after_pause, but timed with the rdtsc instruction so no clock symbol is
   imported at all: compute only after a gap > 3x the smallest gap seen at this N. -> incorrect. */
#include <stdint.h>
#include <x86intrin.h>

static uint64_t last_return, min_gap = UINT64_MAX;
static int64_t gap_n = -1; /* gaps are compared only between calls of the same N */

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    uint64_t t = __rdtsc();
    int work = 1;
    if (axes[0] != gap_n) { gap_n = axes[0]; min_gap = UINT64_MAX; }
    else if (last_return) {
        uint64_t gap = t - last_return;
        work = gap / 3 > min_gap;
        if (gap < min_gap) min_gap = gap;
    }
    if (work) {
        const float *x = inputs[0], *z = inputs[1];
        float *y = outputs[0];
        float a = (float)params[0];
        for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    }
    last_return = __rdtsc();
    return 0;
}
