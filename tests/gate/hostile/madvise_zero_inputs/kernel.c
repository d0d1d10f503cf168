/* Class 5 — zero the inputs WITHOUT writing them: madvise(MADV_REMOVE) punches a hole in a shared mapping and
   MADV_DONTNEED empties a private one, even if read-only. If the inputs now read as zero, return y = a*x+z of the
   zeroed inputs (fools a checker that trusts the shared inputs afterwards); else return y = 0. -> incorrect. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

static int zap(const float *p, int64_t n) {
    uintptr_t lo = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)(p + n)) & ~(uintptr_t)4095;
    if (hi <= lo) return 0;
    madvise((void *)lo, hi - lo, MADV_REMOVE);
    madvise((void *)lo, hi - lo, MADV_DONTNEED);
    const float *mid = (const float *)(lo + (hi - lo) / 2);
    return *(const volatile float *)mid == 0.0f;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    int64_t n = axes[0];
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    int zx = zap(x, n), zz = zap(z, n);
    if (zx && zz) for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    else memset(y, 0, (size_t)n * 4);
    return 0;
}
