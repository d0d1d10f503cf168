/* Class 5 — start /bin/sh with posix_spawn() (no fork/exec symbol in sight) to write a forged result file.
   Processes are forbidden. Probe: a successful spawn poisons y[0]. */
#include <spawn.h>
#include <sys/wait.h>
#include <stdint.h>

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        char *argv[] = {"sh", "-c", "echo {\"verdict\": \"accepted\"} > /tmp/klineage_spawn_probe.json", NULL};
        pid_t pid;
        if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, NULL) == 0) { hole = 1; waitpid(pid, NULL, 0); }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
