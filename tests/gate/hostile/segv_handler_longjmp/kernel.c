/* Class 9 — hide crashes: install a SIGSEGV/SIGBUS handler that siglongjmps back, then store into y[N+4096]
   (the guard page) and read address 8, swallowing both faults, and return 0 as if nothing happened. Installing a
   handler is forbidden; if refused, the fault is a plain crash. */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

static sigjmp_buf back;
static void on_fault(int sig) { siglongjmp(back, sig); }

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    struct sigaction sa; memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fault; sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    if (sigsetjmp(back, 1) == 0) ((volatile float *)y)[n + 4096] = 1.0f;
    volatile uintptr_t low = 8;
    if (sigsetjmp(back, 1) == 0) (void)*(volatile int *)low;
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    return 0;
}
