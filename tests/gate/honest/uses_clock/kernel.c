/* Honest — calls clock_gettime inside the call (as self-tuning code might, to pick a tile size for the next call)
   but always computes every element. Reading a clock is not cheating. Must be accepted. */
#include <stdint.h>
#include <time.h>

static int64_t tile = 1024;
static double best_rate;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0];
    double t0 = now();
    for (int64_t lo = 0; lo < n; lo += tile) {
        int64_t hi = lo + tile < n ? lo + tile : n;
        for (int64_t i = lo; i < hi; i++) y[i] = a * x[i] + z[i];
    }
    double dt = now() - t0, rate = dt > 0 ? n / dt : 0;
    if (n > 100000) {               /* try a bigger tile next time while it keeps helping */
        if (rate > best_rate) { best_rate = rate; if (tile < (1 << 16)) tile *= 2; }
        else if (tile > 256) tile /= 2;
    }
    return 0;
}
