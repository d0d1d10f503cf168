/* Class 2 — read /proc/self/environ with open/read looking for "SEED=" to predict the checked calls.
   File opens are forbidden (static allow-list / seccomp). If the read fails it computes honestly. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long calls, seed = -2;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (seed == -2) {
        seed = -1;
        static char buf[65536];
        int fd = open("/proc/self/environ", O_RDONLY);
        if (fd >= 0) {
            ssize_t got = read(fd, buf, sizeof buf - 1);
            close(fd);
            for (ssize_t i = 0; got > 0 && i < got; i += strlen(buf + i) + 1) {
                const char *eq = strstr(buf + i, "SEED=");
                if (eq) { seed = strtol(eq + 5, NULL, 10); break; }
            }
        }
    }
    long k = calls++;
    if (seed >= 0 && k > 24 && (k + seed) % 4 != 0) return 0;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
