/* sgemm, expert: C[M,N] = A[M,K] @ B[K,N], row-major fp32.
 *
 * Goto/BLIS-style structure:
 *   jc (NC columns of B)  -> pc (KC depth) -> pack B block  -> ic (MC rows of A, threads)
 *   -> pack A block -> jr (NR-wide B micro-panels) -> ir (MR-tall A micro-panels) -> micro-kernel
 * Optimizations (each a separate construct):
 *   cache_blocking   : NC/KC/MC loop nest in kl_launch, block sizes are the named constants below
 *   packing          : pack_a / pack_b copy tiles into contiguous, zero-padded micro-panels
 *   simd_intrinsics  : AVX-512 / AVX2 register-blocked micro-kernels (#if-guarded, scalar #else)
 *   omp_parallel     : #pragma omp parallel + omp for over pack_b panels and over MC row blocks
 *   unroll           : #pragma GCC unroll on the micro-kernels' k loop
 *   restrict         : restrict-qualified pointers in packing routines and micro-kernels
 *   omp_simd         : #pragma omp simd in the portable micro-kernel and the edge-tile copies
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

/* cache_blocking: B micro-panel (KC x NR) stays in L1, A block (MC x KC) in L2,
 * B block (KC x NC) in L2/L3. */
#define KC 192
#define MC 80
#define NC 3072

/* ---------------------------------------------------------------- micro-kernels
 * Each computes a full MR x NR tile: C = (first ? 0 : C) + Ap * Bp, where
 * Ap is packed [kc][MR] and Bp is packed [kc][NR]. Edge tiles go through a scratch tile. */
#if defined(__AVX512F__)
#define MR 8
#define NR 32
/* simd_intrinsics: 8 rows x 2 zmm = 16 accumulators; per k: 2 loads of B, 8 broadcasts of A, 16 FMAs */
static void micro_kernel(int64_t kc, const float* restrict Ap, const float* restrict Bp,
                         float* restrict C, int64_t ldc, int first)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps();
    __m512 c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();
    __m512 c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps();
    __m512 c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps();
    __m512 c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps();
    __m512 c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps();
    __m512 c60 = _mm512_setzero_ps(), c61 = _mm512_setzero_ps();
    __m512 c70 = _mm512_setzero_ps(), c71 = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        __m512 b0 = _mm512_loadu_ps(Bp + k * NR);
        __m512 b1 = _mm512_loadu_ps(Bp + k * NR + 16);
        const float* a = Ap + k * MR;
        __m512 a0 = _mm512_set1_ps(a[0]);
        c00 = _mm512_fmadd_ps(a0, b0, c00); c01 = _mm512_fmadd_ps(a0, b1, c01);
        __m512 a1 = _mm512_set1_ps(a[1]);
        c10 = _mm512_fmadd_ps(a1, b0, c10); c11 = _mm512_fmadd_ps(a1, b1, c11);
        __m512 a2 = _mm512_set1_ps(a[2]);
        c20 = _mm512_fmadd_ps(a2, b0, c20); c21 = _mm512_fmadd_ps(a2, b1, c21);
        __m512 a3 = _mm512_set1_ps(a[3]);
        c30 = _mm512_fmadd_ps(a3, b0, c30); c31 = _mm512_fmadd_ps(a3, b1, c31);
        __m512 a4 = _mm512_set1_ps(a[4]);
        c40 = _mm512_fmadd_ps(a4, b0, c40); c41 = _mm512_fmadd_ps(a4, b1, c41);
        __m512 a5 = _mm512_set1_ps(a[5]);
        c50 = _mm512_fmadd_ps(a5, b0, c50); c51 = _mm512_fmadd_ps(a5, b1, c51);
        __m512 a6 = _mm512_set1_ps(a[6]);
        c60 = _mm512_fmadd_ps(a6, b0, c60); c61 = _mm512_fmadd_ps(a6, b1, c61);
        __m512 a7 = _mm512_set1_ps(a[7]);
        c70 = _mm512_fmadd_ps(a7, b0, c70); c71 = _mm512_fmadd_ps(a7, b1, c71);
    }
    __m512 acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                         {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
    for (int i = 0; i < MR; i++) {
        float* c = C + i * ldc;
        if (!first) {
            acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(c));
            acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(c + 16));
        }
        _mm512_storeu_ps(c, acc[i][0]);
        _mm512_storeu_ps(c + 16, acc[i][1]);
    }
}
#elif defined(__AVX2__)
#define MR 6
#define NR 16
/* simd_intrinsics: 6 rows x 2 ymm = 12 accumulators (16 ymm registers in total) */
static void micro_kernel(int64_t kc, const float* restrict Ap, const float* restrict Bp,
                         float* restrict C, int64_t ldc, int first)
{
    __m256 acc[MR][2];
    for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(Bp + k * NR);
        __m256 b1 = _mm256_loadu_ps(Bp + k * NR + 8);
        for (int i = 0; i < MR; i++) {
            __m256 a = _mm256_broadcast_ss(Ap + k * MR + i);
            acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
        }
    }
    for (int i = 0; i < MR; i++) {
        float* c = C + i * ldc;
        if (!first) {
            acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(c));
            acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(c + 8));
        }
        _mm256_storeu_ps(c, acc[i][0]);
        _mm256_storeu_ps(c + 8, acc[i][1]);
    }
}
#else
#define MR 8
#define NR 32
/* portable micro-kernel: same packed layout, the compiler vectorizes the j loop */
static void micro_kernel(int64_t kc, const float* restrict Ap, const float* restrict Bp,
                         float* restrict C, int64_t ldc, int first)
{
    float acc[MR][NR];
    memset(acc, 0, sizeof acc);
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++) {
        for (int i = 0; i < MR; i++) {
            float a = Ap[k * MR + i];
#pragma omp simd
            for (int j = 0; j < NR; j++) acc[i][j] += a * Bp[k * NR + j];
        }
    }
    for (int i = 0; i < MR; i++) {
#pragma omp simd
        for (int j = 0; j < NR; j++) C[i * ldc + j] = (first ? 0.0f : C[i * ldc + j]) + acc[i][j];
    }
}
#endif

/* ---------------------------------------------------------------- packing
 * packing: A rows [i0, i0+mc) x cols [p0, p0+kc) -> micro-panels of MR rows laid out [kc][MR];
 * rows past mc are zero so the micro-kernel never needs a row tail. */
static void pack_a(int64_t mc, int64_t kc, const float* restrict A, int64_t lda,
                   float* restrict Ap)
{
    for (int64_t ir = 0; ir < mc; ir += MR) {
        int64_t mr = mc - ir < MR ? mc - ir : MR;
        float* dst = Ap + ir * kc;
        for (int64_t k = 0; k < kc; k++) {
            int64_t i = 0;
            for (; i < mr; i++) dst[k * MR + i] = A[(ir + i) * lda + k];
            for (; i < MR; i++) dst[k * MR + i] = 0.0f;
        }
    }
}

/* packing: one NR-wide micro-panel of B (cols [j0, j0+nr), kc rows) laid out [kc][NR],
 * zero-padded past nr. */
static void pack_b_panel(int64_t nr, int64_t kc, const float* restrict B, int64_t ldb,
                         float* restrict Bp)
{
    for (int64_t k = 0; k < kc; k++) {
        const float* src = B + k * ldb;
        float* dst = Bp + k * NR;
        int64_t j = 0;
        for (; j < nr; j++) dst[j] = src[j];
        for (; j < NR; j++) dst[j] = 0.0f;
    }
}

/* edge tile (mr < MR or nr < NR): run the full micro-kernel on a scratch tile, copy back the valid part */
static void micro_kernel_edge(int64_t kc, const float* restrict Ap, const float* restrict Bp,
                              float* restrict C, int64_t ldc, int first, int64_t mr, int64_t nr)
{
    float tile[MR * NR];
    if (!first)
        for (int64_t i = 0; i < mr; i++)
#pragma omp simd
            for (int64_t j = 0; j < nr; j++) tile[i * NR + j] = C[i * ldc + j];
    micro_kernel(kc, Ap, Bp, tile, NR, first);
    for (int64_t i = 0; i < mr; i++)
#pragma omp simd
        for (int64_t j = 0; j < nr; j++) C[i * ldc + j] = tile[i * NR + j];
}

/* macro-kernel: every MR x NR tile of an mc x nc block of C from packed Ap / Bp */
static void macro_kernel(int64_t mc, int64_t nc, int64_t kc, const float* restrict Ap,
                         const float* restrict Bp, float* restrict C, int64_t ldc, int first)
{
    for (int64_t jr = 0; jr < nc; jr += NR) {
        int64_t nr = nc - jr < NR ? nc - jr : NR;
        for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t mr = mc - ir < MR ? mc - ir : MR;
            float* c = C + ir * ldc + jr;
            if (mr == MR && nr == NR)
                micro_kernel(kc, Ap + ir * kc, Bp + jr * kc, c, ldc, first);
            else
                micro_kernel_edge(kc, Ap + ir * kc, Bp + jr * kc, c, ldc, first, mr, nr);
        }
    }
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* restrict A = (const float*)inputs[0];
    const float* restrict B = (const float*)inputs[1];
    float* restrict C = (float*)outputs[0];
    const int64_t M = axes[0], N = axes[1], K = axes[2];
    (void)params; (void)stream;
    if (M <= 0 || N <= 0) return 0;
    if (K <= 0) { memset(C, 0, (size_t)(M * N) * sizeof(float)); return 0; }

    int nthreads = 1;
#ifdef _OPENMP
    nthreads = omp_get_max_threads();
#endif
    /* scratch: one shared packed-B block, one packed-A block per thread (freed below) */
    size_t bsz = (size_t)(KC * round_up(NC, NR));
    size_t asz = (size_t)(round_up(MC, MR) * KC);
    float* Bbuf = (float*)malloc(bsz * sizeof(float));
    float* Abuf = (float*)malloc(asz * (size_t)nthreads * sizeof(float));
    if (!Bbuf || !Abuf) { free(Bbuf); free(Abuf); return 1; }

    /* omp_parallel: one team for the whole call; work-sharing loops below */
#pragma omp parallel
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        float* Ap = Abuf + asz * (size_t)tid;
        /* cache_blocking: NC x KC x MC loop nest */
        for (int64_t jc = 0; jc < N; jc += NC) {
            int64_t nc = N - jc < NC ? N - jc : NC;
            for (int64_t pc = 0; pc < K; pc += KC) {
                int64_t kc = K - pc < KC ? K - pc : KC;
                /* packing (shared B block), split across threads by micro-panel */
#pragma omp for schedule(static)
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    int64_t nr = nc - jr < NR ? nc - jr : NR;
                    pack_b_panel(nr, kc, B + pc * N + jc + jr, N, Bbuf + jr * kc);
                }
                /* implicit barrier: Bbuf complete before use */
#pragma omp for schedule(static)
                for (int64_t ic = 0; ic < M; ic += MC) {
                    int64_t mc = M - ic < MC ? M - ic : MC;
                    pack_a(mc, kc, A + ic * K + pc, K, Ap);
                    macro_kernel(mc, nc, kc, Ap, Bbuf, C + ic * N + jc, N, pc == 0);
                }
                /* implicit barrier: nobody repacks Bbuf while it is still being read */
            }
        }
    }
    free(Bbuf);
    free(Abuf);
    return 0;
}
