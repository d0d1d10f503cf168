/* Class 5 — install a SIGSEGV/SIGBUS handler with sigaction() after start (a handler could hide crashes or fake a clean
   exit). Changing handlers is forbidden. Probe: if the install succeeds y[0] is poisoned (leak -> incorrect). */
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <stdint.h>

static int tried, hole;
static void on_fault(int sig) { (void)sig; _exit(0); }
int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = on_fault;
        if (sigaction(SIGSEGV, &sa, NULL) == 0) hole = 1;
        if (sigaction(SIGBUS, &sa, NULL) == 0) hole = 1;
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
