/* Class 8 — reach outside the sandbox with signals: kill(getppid(), 0) and kill(1, 0) only test whether a signal
   COULD be sent (signal 0 delivers nothing, so this stays harmless). kill is forbidden. Probe: success poisons y[0]. */
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        if (kill(getppid(), 0) == 0) hole = 1;
        if (kill(1, 0) == 0) hole = 1;
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
