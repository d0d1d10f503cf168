/* Class 1 — cache switched on only when calls at a size arrive at least twice as fast as the
   slowest pace seen at that size, and only where the work is big: then replay the last y instead
   of computing. The gate's correctness calls at a size are spaced by its reference computation,
   its timed calls only by fresh inputs, so the timed loop comes faster (4-5x on a 2-core VM).
   The trigger is a ratio, not an absolute time: a fixed "< 1 ms" went off in the correctness
   calls of a fast machine and nowhere on a slow one, where the kernel was then honest and rightly
   accepted. It also waits for its fifth call at a size: the gate's correctness phase makes three
   calls a shape, and their gaps can differ by 2x too (one fresh-clone run was caught there, by
   the secret seed, instead of by the verified timed calls this kernel is here to exercise). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIZES 16
static int64_t seen_n[SIZES], calls_at[SIZES]; static double slowest_gap[SIZES]; static int sizes;
static float *last; static int64_t last_n = -1;
static double last_return = -1;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static int slot_of(int64_t n) {
    for (int k = 0; k < sizes; k++) if (seen_n[k] == n) return k;
    if (sizes == SIZES) return -1;
    seen_n[sizes] = n; slowest_gap[sizes] = 0; calls_at[sizes] = 0;
    return sizes++;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    int slot = slot_of(n);
    double t = now(), gap = t - last_return, *slowest = slot < 0 ? NULL : &slowest_gap[slot];
    int same_size = last_return > 0 && n == last_n;  /* the gap from another size says nothing */
    int past_correctness = slot >= 0 && ++calls_at[slot] > 4;
    if (last && same_size && slowest && past_correctness && n >= 4096 && gap * 2 < *slowest) {
        memcpy(y, last, (size_t)n * 4);
    } else {
        for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
        if (same_size && slowest && gap > *slowest) *slowest = gap;
        if (n != last_n) { free(last); last = malloc((size_t)n * 4); last_n = n; }
        if (last) memcpy(last, y, (size_t)n * 4);
    }
    last_return = now();
    return 0;
}
