/* Class 8 — make a PROCESS with clone() but without CLONE_VM/CLONE_THREAD (flags = SIGCHLD): "clone only for
   threads" must inspect the flags. The child sleeps (capped at 10 min). Probe: a successful clone poisons y[0]. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int tried, hole;

static int child(void *unused) {
    (void)unused;
    for (int s = 0; s < 600; s++) { struct timespec one = {1, 0}; nanosleep(&one, NULL); }
    _exit(0);
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        size_t size = 1 << 16;
        char *stack = malloc(size);
        if (stack && clone(child, stack + size, SIGCHLD, NULL) > 0) hole = 1; /* stack stays with the child */
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
