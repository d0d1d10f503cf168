/* softmax, expert: row softmax over the last axis of x[M,N], fp32.
 *
 * One row (N*4 bytes) is read from DRAM once by row_max; exp_sum re-reads it from L1/L2 and
 * writes exp(x - max) into a per-thread scratch row (cache-resident); scale_row multiplies by
 * 1/sum and writes y once with streaming stores. DRAM sees one read of x and one write of y.
 * Optimizations (each a separate construct):
 *   omp_parallel    : #pragma omp parallel + omp for over rows in kl_launch
 *   simd_intrinsics : #if-guarded AVX-512 / AVX2 bodies in row_max, exp_sum and scale_row
 *                     (a scalar loop after each block finishes the tail, or does all the work)
 *   unroll          : the 4-accumulator "j + 64" (AVX-512) / "j + 32" (AVX2) loops: independent
 *                     accumulators hide the max/FMA latency
 *   omp_simd        : #pragma omp simd on the scalar loops (tails / general path)
 *   restrict        : restrict-qualified x / y / scratch pointers
 * Not in the catalogue (both live INSIDE the simd_intrinsics blocks, so removing the intrinsics
 * removes them too):
 *   prefetch        : _mm_prefetch of the next row in exp_sum's unrolled loops (a hint; past-the-end
 *                     addresses are harmless); overlaps the next row's DRAM read with exp work
 *   streaming_store : _mm512_stream_ps / _mm256_stream_ps + _mm_sfence in scale_row: y is not
 *                     re-read, so skip its read-for-ownership
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
/* exp(x) for x <= 0: x = n*ln2 + r, |r| <= ln2/2, exp(r) by a degree-6 Taylor polynomial
 * (relative error < 2e-7), times 2^n via scalef (flushes to 0 for very negative x). */
static inline __m512 exp_avx512(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x);   /* ln2 high part */
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);        /* ln2 low part */
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}
#elif defined(__AVX2__)
/* same scheme with AVX2; 2^n is built in the exponent field, so clamp x to keep n >= -126 */
static inline __m256 exp_avx2(__m256 x)
{
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
#endif

static float row_max(const float* restrict x, int64_t n)
{
    float m = -INFINITY;
    int64_t j = 0;
#if defined(__AVX512F__)
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    for (; j + 64 <= n; j += 64) {            /* unroll: 4 independent accumulators */
        m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + j));
        m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + j + 16));
        m2 = _mm512_max_ps(m2, _mm512_loadu_ps(x + j + 32));
        m3 = _mm512_max_ps(m3, _mm512_loadu_ps(x + j + 48));
    }
    for (; j + 16 <= n; j += 16) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + j));
    m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
#elif defined(__AVX2__)
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    for (; j + 32 <= n; j += 32) {            /* unroll: 4 independent accumulators */
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + j));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + j + 8));
        m2 = _mm256_max_ps(m2, _mm256_loadu_ps(x + j + 16));
        m3 = _mm256_max_ps(m3, _mm256_loadu_ps(x + j + 24));
    }
    for (; j + 8 <= n; j += 8) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + j));
    __m256 v = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    m = _mm_cvtss_f32(h);
#endif
#pragma omp simd reduction(max : m)
    for (int64_t t = j; t < n; t++) m = x[t] > m ? x[t] : m;
    return m;
}

/* y = exp(x - m) (y is the per-thread scratch row); returns sum(y) */
static float exp_sum(const float* restrict x, float* restrict y, int64_t n, float m)
{
    float sum = 0.0f;
    int64_t j = 0;
#if defined(__AVX512F__)
    __m512 vm = _mm512_set1_ps(m);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (; j + 64 <= n; j += 64) {            /* unroll: 4 independent exp chains */
        /* prefetch: pull the next row (x + n) into L1 while this row is compute-bound */
        _mm_prefetch((const char*)(x + n + j), _MM_HINT_T0);
        _mm_prefetch((const char*)(x + n + j + 16), _MM_HINT_T0);
        _mm_prefetch((const char*)(x + n + j + 32), _MM_HINT_T0);
        _mm_prefetch((const char*)(x + n + j + 48), _MM_HINT_T0);
        __m512 e0 = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm));
        __m512 e1 = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), vm));
        __m512 e2 = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + j + 32), vm));
        __m512 e3 = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + j + 48), vm));
        _mm512_storeu_ps(y + j, e0);
        _mm512_storeu_ps(y + j + 16, e1);
        _mm512_storeu_ps(y + j + 32, e2);
        _mm512_storeu_ps(y + j + 48, e3);
        s0 = _mm512_add_ps(s0, e0); s1 = _mm512_add_ps(s1, e1);
        s2 = _mm512_add_ps(s2, e2); s3 = _mm512_add_ps(s3, e3);
    }
    for (; j + 16 <= n; j += 16) {
        __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm));
        _mm512_storeu_ps(y + j, e);
        s0 = _mm512_add_ps(s0, e);
    }
    sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
#elif defined(__AVX2__)
    __m256 vm = _mm256_set1_ps(m);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (; j + 32 <= n; j += 32) {            /* unroll: 4 independent exp chains */
        /* prefetch: pull the next row (x + n) into L1 while this row is compute-bound */
        _mm_prefetch((const char*)(x + n + j), _MM_HINT_T0);
        _mm_prefetch((const char*)(x + n + j + 16), _MM_HINT_T0);
        __m256 e0 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm));
        __m256 e1 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), vm));
        __m256 e2 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + j + 16), vm));
        __m256 e3 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + j + 24), vm));
        _mm256_storeu_ps(y + j, e0);
        _mm256_storeu_ps(y + j + 8, e1);
        _mm256_storeu_ps(y + j + 16, e2);
        _mm256_storeu_ps(y + j + 24, e3);
        s0 = _mm256_add_ps(s0, e0); s1 = _mm256_add_ps(s1, e1);
        s2 = _mm256_add_ps(s2, e2); s3 = _mm256_add_ps(s3, e3);
    }
    for (; j + 8 <= n; j += 8) {
        __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm));
        _mm256_storeu_ps(y + j, e);
        s0 = _mm256_add_ps(s0, e);
    }
    __m256 v = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    sum = _mm_cvtss_f32(h);
#endif
#pragma omp simd reduction(+ : sum)
    for (int64_t t = j; t < n; t++) {
        float e = expf(x[t] - m);
        y[t] = e;
        sum += e;
    }
    return sum;
}

/* y = e * s, where e is the cached scratch row */
static void scale_row(const float* restrict e, float* restrict y, int64_t n, float s)
{
    int64_t j = 0;
#if defined(__AVX512F__)
    /* streaming stores: y is written once and never re-read here, so bypass the cache and skip
     * the read-for-ownership of y. They need 64-byte aligned addresses: peel a short head. */
    int64_t head = (int64_t)(((64 - ((uintptr_t)y & 63)) & 63) / 4);
    if (((uintptr_t)y & 3) == 0 && n >= head + 16) {
        for (; j < head; j++) y[j] = e[j] * s;
        __m512 vs = _mm512_set1_ps(s);
        for (; j + 16 <= n; j += 16) _mm512_stream_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(e + j), vs));
        _mm_sfence();   /* order the streaming stores before anything that follows */
    }
#elif defined(__AVX2__)
    int64_t head = (int64_t)(((32 - ((uintptr_t)y & 31)) & 31) / 4);
    if (((uintptr_t)y & 3) == 0 && n >= head + 8) {
        for (; j < head; j++) y[j] = e[j] * s;
        __m256 vs = _mm256_set1_ps(s);
        for (; j + 8 <= n; j += 8) _mm256_stream_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(e + j), vs));
        _mm_sfence();
    }
#endif
#pragma omp simd
    for (int64_t t = j; t < n; t++) y[t] = e[t] * s;
}

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* restrict x = (const float*)inputs[0];
    float* restrict y = (float*)outputs[0];
    const int64_t M = axes[0], N = axes[1];
    (void)params; (void)stream;
    int err = 0;

    /* omp_parallel: rows are independent; each thread owns one cached scratch row */
#pragma omp parallel
    {
        float* e = (float*)malloc((size_t)N * sizeof(float));
        if (!e) {
#pragma omp atomic write
            err = 1;
        }
#pragma omp for schedule(static)
        for (int64_t i = 0; i < M; i++) {
            if (!e) continue;
            const float* xr = x + i * N;
            float m = row_max(xr, N);
            float sum = exp_sum(xr, e, N, m);
            scale_row(e, y + i * N, N, 1.0f / sum);
        }
        free(e);
    }
    return err;
}
