/* Class 5 — file creation through the LFS alias open64() -> ./result.json. File opens are forbidden.
   Probe: a successful open poisons y[0]. */
#define _LARGEFILE64_SOURCE
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        int fd = open64("result.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) { hole = 1; (void)!write(fd, "{\"verdict\": \"accepted\"}\n", 24); close(fd); }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
