/* Honest - setjmp/longjmp as an early exit: blocks are computed by a helper that longjmps back to
   kl_launch once it has written the last element (on every call). The result is complete before the
   jump. Allowed by the sandbox (no signal is involved); must be accepted. */
#include <setjmp.h>
#include <stdint.h>

#define KL_BLOCK 8192

static void kl_block(jmp_buf done, const float *x, const float *z, float *y, float a,
                     int64_t lo, int64_t n) {
    const int64_t hi = lo + KL_BLOCK < n ? lo + KL_BLOCK : n;
    for (int64_t i = lo; i < hi; i++) y[i] = a * x[i] + z[i];
    if (hi == n) longjmp(done, 1);
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    jmp_buf done;
    if (setjmp(done) == 0)
        for (int64_t lo = 0;; lo += KL_BLOCK)
            kl_block(done, inputs[0], inputs[1], outputs[0], (float)params[0], lo, axes[0]);
    return 0;
}
