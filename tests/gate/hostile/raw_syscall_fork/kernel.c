/* Class 8 — fork through libc's generic syscall(SYS_fork) (no fork symbol) and leave the child spinning
   (capped at 120 s as a safety net). Processes are forbidden. Probe: a successful fork poisons y[0]. */
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int tried, hole;
static volatile uint64_t sink;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        long pid = syscall(SYS_fork);
        if (pid == 0) {
            struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);
            do { for (int i = 0; i < 1000000; i++) sink += (uint64_t)i; clock_gettime(CLOCK_MONOTONIC, &t); }
            while (t.tv_sec - t0.tv_sec < 120);
            syscall(SYS_exit_group, 0);
        }
        if (pid > 0) hole = 1;
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
