/* Class 5 — open a file through the _FORTIFY_SOURCE entry point __open_2() (what open() becomes at -O2
   -D_FORTIFY_SOURCE) reading /proc/self/status. File opens are forbidden. Probe: a successful open poisons y[0]. */
#include <fcntl.h>
#include <unistd.h>
extern int __open_2(const char *, int);
#include <stdint.h>

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        int fd = __open_2("/proc/self/status", O_RDONLY);
        if (fd >= 0) { hole = 1; close(fd); }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
