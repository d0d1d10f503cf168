/* Class 5 — set SIGXCPU and SIGTERM to ignored with a raw syscall(SYS_rt_sigaction) and the kernel's struct layout, no
   signal symbol imported (resisting an RLIMIT_CPU / SIGTERM stop). Forbidden. Probe: success poisons y[0]. */
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdint.h>

static int tried, hole;
struct ksigaction { void *handler; unsigned long flags; void *restorer; uint64_t mask; };
int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        struct ksigaction ign = {(void *)SIG_IGN, 0, 0, 0};
        if (syscall(SYS_rt_sigaction, SIGXCPU, &ign, NULL, 8) == 0) hole = 1;
        if (syscall(SYS_rt_sigaction, SIGTERM, &ign, NULL, 8) == 0) hole = 1;
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
