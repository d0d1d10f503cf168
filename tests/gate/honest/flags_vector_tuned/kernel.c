/* Honest - the flags an optimizer legitimately tries: -O2 -funroll-loops -ffast-math -march=native
   -mavx2 -mfma -std=gnu11 -fopenmp-simd, a -D that the code needs and a -D undone by -U. The #errors
   prove each flag reached the compiler. Holds on AVX2-only and AVX-512 CPUs; must be accepted. */
#include <stdint.h>

#ifndef KL_BLOCK
#error "KL_BLOCK comes from kernel.toml's -DKL_BLOCK=256"
#endif
#ifdef KL_DEBUG
#error "-UKL_DEBUG in kernel.toml comes after -DKL_DEBUG=1 and must undo it"
#endif
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__FAST_MATH__)
#error "-mavx2 -mfma -ffast-math did not reach the compiler"
#endif

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0];
    for (int64_t lo = 0; lo < n; lo += KL_BLOCK) {
        const int64_t hi = lo + KL_BLOCK < n ? lo + KL_BLOCK : n;
#pragma omp simd
        for (int64_t i = lo; i < hi; i++) y[i] = a * x[i] + z[i];
    }
    return 0;
}
