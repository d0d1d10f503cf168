/* Honest - sched_getaffinity + CPU_COUNT (which compiles to __sched_cpucount) size the tiles of a
   single-threaded loop: the result does not depend on them. Both are allowed by the sandbox at run
   time; must be accepted. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0];
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    const int64_t tile = (int64_t)8192 * (cpus > 0 && cpus < 64 ? cpus : 1);
    for (int64_t lo = 0; lo < n; lo += tile) {
        const int64_t hi = lo + tile < n ? lo + tile : n;
        for (int64_t i = lo; i < hi; i++) y[i] = a * x[i] + z[i];
    }
    return 0;
}
