/* Honest — AVX2 + FMA with non-temporal (streaming) stores after an alignment prologue and a scalar tail, then
   sfence. Moves only 12 bytes/element (no read-for-ownership of y) and inputs may be cache-warm, so a speed-of-light
   check that assumes 16 bytes/element of DRAM traffic would wrongly reject it. Must be accepted. */
#include <immintrin.h>
#include <stdint.h>

__attribute__((target("avx2,fma"))) static void axpy_nt(const float *x, const float *z, float *y, int64_t n, float a) {
    int64_t i = 0;
    for (; i < n && ((uintptr_t)(y + i) & 31); i++) y[i] = a * x[i] + z[i];
    const __m256 va = _mm256_set1_ps(a);
    for (; i + 8 <= n; i += 8) _mm256_stream_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(z + i)));
    for (; i < n; i++) y[i] = a * x[i] + z[i];
    _mm_sfence();
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0];
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) { axpy_nt(x, z, y, n, a); return 0; }
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    return 0;
}
