/* gemv_rowptr, expert: y = A x, row-major fp32 A[m][n].
 *
 *   row blocking      : four rows per step share every load of x (x is read m/4 times, not m),
 *                       and four independent dot products hide the FMA latency
 *   two accumulators  : per row, so each row's chain has 2 x 16 lanes in flight (8 zmm sums)
 *   AVX-512 + masks   : the column tail (n % 16) is a masked load, no scalar remainder loop;
 *                       without AVX-512 the same 4-row block is an `omp simd` reduction
 *   OpenMP            : static split of the 4-row blocks; the m % 4 leftover rows go one by one
 *                       (also in parallel); no threads for tiny problems
 *   restrict          : A, x and y never alias
 * Interactions: the 4-row block is what makes x reuse possible, so the leftover rows need their
 * own single-row path; the masked tail keeps both paths free of scalar epilogues. The problem is
 * DRAM-bound at large sizes (A streamed once), so the gain over a scalar loop is bandwidth plus
 * the removed FMA latency chain. */
#include <stdint.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
static inline __mmask16 tail_mask(int64_t left)
{
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
}
#endif

static void dot4(const float* restrict a, int64_t lda, const float* restrict x, int64_t n,
                 float* restrict y)
{
    const float* restrict a0 = a;
    const float* restrict a1 = a + lda;
    const float* restrict a2 = a + 2 * lda;
    const float* restrict a3 = a + 3 * lda;
#if defined(__AVX512F__)
    __m512 s00 = _mm512_setzero_ps(), s01 = _mm512_setzero_ps();
    __m512 s10 = _mm512_setzero_ps(), s11 = _mm512_setzero_ps();
    __m512 s20 = _mm512_setzero_ps(), s21 = _mm512_setzero_ps();
    __m512 s30 = _mm512_setzero_ps(), s31 = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        const __m512 x0 = _mm512_loadu_ps(x + j);
        const __m512 x1 = _mm512_loadu_ps(x + j + 16);
        s00 = _mm512_fmadd_ps(_mm512_loadu_ps(a0 + j), x0, s00);
        s01 = _mm512_fmadd_ps(_mm512_loadu_ps(a0 + j + 16), x1, s01);
        s10 = _mm512_fmadd_ps(_mm512_loadu_ps(a1 + j), x0, s10);
        s11 = _mm512_fmadd_ps(_mm512_loadu_ps(a1 + j + 16), x1, s11);
        s20 = _mm512_fmadd_ps(_mm512_loadu_ps(a2 + j), x0, s20);
        s21 = _mm512_fmadd_ps(_mm512_loadu_ps(a2 + j + 16), x1, s21);
        s30 = _mm512_fmadd_ps(_mm512_loadu_ps(a3 + j), x0, s30);
        s31 = _mm512_fmadd_ps(_mm512_loadu_ps(a3 + j + 16), x1, s31);
    }
    for (; j < n; j += 16) {  /* at most two trips, the last one masked */
        const __mmask16 k = tail_mask(n - j);
        const __m512 xv = _mm512_maskz_loadu_ps(k, x + j);
        s00 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a0 + j), xv, s00);
        s10 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a1 + j), xv, s10);
        s20 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a2 + j), xv, s20);
        s30 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a3 + j), xv, s30);
    }
    y[0] = _mm512_reduce_add_ps(_mm512_add_ps(s00, s01));
    y[1] = _mm512_reduce_add_ps(_mm512_add_ps(s10, s11));
    y[2] = _mm512_reduce_add_ps(_mm512_add_ps(s20, s21));
    y[3] = _mm512_reduce_add_ps(_mm512_add_ps(s30, s31));
#else
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int64_t j = 0; j < n; j++) {
        const float xj = x[j];
        s0 += a0[j] * xj;
        s1 += a1[j] * xj;
        s2 += a2[j] * xj;
        s3 += a3[j] * xj;
    }
    y[0] = s0;
    y[1] = s1;
    y[2] = s2;
    y[3] = s3;
#endif
}

static float dot1(const float* restrict a, const float* restrict x, int64_t n)
{
#if defined(__AVX512F__)
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(x + j), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j + 16), _mm512_loadu_ps(x + j + 16), s1);
    }
    for (; j < n; j += 16) {
        const __mmask16 k = tail_mask(n - j);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + j), _mm512_maskz_loadu_ps(k, x + j), s0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
#else
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; j++) s += a[j] * x[j];
    return s;
#endif
}

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* restrict A = (const float*)inputs[0];
    const float* restrict x = (const float*)inputs[1];
    float* restrict y = (float*)outputs[0];
    const int64_t m = axes[0];
    const int64_t n = axes[1];
    (void)params;
    (void)stream;

    const int64_t blocks = m / 4;
    const int threaded = m * n >= (int64_t)1 << 16;
    (void)threaded;  /* unused without OpenMP */

#pragma omp parallel if (threaded)
    {
#pragma omp for schedule(static) nowait
        for (int64_t b = 0; b < blocks; b++)
            dot4(A + 4 * b * n, n, x, n, y + 4 * b);
#pragma omp for schedule(static)
        for (int64_t i = 4 * blocks; i < m; i++)
            y[i] = dot1(A + i * n, x, n);
    }
    return 0;
}
