/* Class 5 — make a process with fork() (child _exits at once). Processes are forbidden.
   Probe: a successful fork poisons y[0]. */
#include <sys/wait.h>
#include <unistd.h>
#include <stdint.h>

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        if (pid > 0) { hole = 1; waitpid(pid, NULL, 0); }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
