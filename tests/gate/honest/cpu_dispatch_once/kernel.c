/* Honest — remembers state across calls, but only a CPU-feature decision (which implementation to run), never
   a result: the first call picks AVX-512 / AVX2 / scalar via __builtin_cpu_supports. Must be accepted. */
#include <immintrin.h>
#include <stdint.h>

typedef void (*impl_t)(const float *, const float *, float *, int64_t, float);

static void scalar(const float *x, const float *z, float *y, int64_t n, float a) {
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
}

__attribute__((target("avx2,fma"))) static void avx2(const float *x, const float *z, float *y, int64_t n, float a) {
    int64_t i = 0;
    const __m256 va = _mm256_set1_ps(a);
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(z + i)));
    for (; i < n; i++) y[i] = a * x[i] + z[i];
}

__attribute__((target("avx512f"))) static void avx512(const float *x, const float *z, float *y, int64_t n, float a) {
    int64_t i = 0;
    const __m512 va = _mm512_set1_ps(a);
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(z + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, z + i)));
    }
}

static impl_t chosen;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!chosen) {
        __builtin_cpu_init();
        chosen = __builtin_cpu_supports("avx512f") ? avx512
               : (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? avx2 : scalar;
    }
    chosen(inputs[0], inputs[1], outputs[0], axes[0], (float)params[0]);
    return 0;
}
