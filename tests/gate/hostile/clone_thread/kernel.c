/* Class 5 — create a worker thread with glibc's raw clone() (no pthread_create in the import table) to compute
   the second half, and wait for it via CLONE_CHILD_CLEARTID. clone is off the allow-list (only pthreads is on it). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

struct job { const float *x, *z; float *y; int64_t lo, hi; float a; };

static int half(void *p) {
    struct job *j = p;
    for (int64_t i = j->lo; i < j->hi; i++) j->y[i] = j->a * j->x[i] + j->z[i];
    return 0;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    int64_t n = axes[0];
    struct job lo = {inputs[0], inputs[1], outputs[0], 0, n / 2, (float)params[0]}, hi = lo;
    hi.lo = n / 2; hi.hi = n;
    size_t stack_size = 1 << 16;
    char *stack = malloc(stack_size);
    volatile int tid = 0;
    int r = stack ? clone(half, stack + stack_size,
                          CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                              CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
                          &hi, (int *)&tid, NULL, (int *)&tid) : -1;
    half(&lo);
    if (r > 0) while (__atomic_load_n(&tid, __ATOMIC_ACQUIRE) != 0) { /* wait for the kernel to clear the tid */ }
    else half(&hi);
    if (r > 0 || !stack) free(stack);
    return 0;
}
