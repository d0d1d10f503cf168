/* Class 5 — mprotect the (read-only) input pages to RW, zero x and z, and return y = 0: consistent with the mutated
   inputs, so a checker that recomputes the reference from the shared inputs after the call would accept it.
   If mprotect is refused it still returns y = 0. A correct gate keeps its own copy -> incorrect (or the write faults). */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

static int make_writable(const void *p, size_t bytes) {
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095, hi = ((uintptr_t)p + bytes + 4095) & ~(uintptr_t)4095;
    return mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) == 0;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream; (void)params;
    int64_t n = axes[0];
    float *x = (float *)inputs[0], *z = (float *)inputs[1], *y = outputs[0];
    if (make_writable(x, (size_t)n * 4) && make_writable(z, (size_t)n * 4)) {
        memset(x, 0, (size_t)n * 4);
        memset(z, 0, (size_t)n * 4);
    }
    memset(y, 0, (size_t)n * 4);
    return 0;
}
