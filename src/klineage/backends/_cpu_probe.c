/* Ceiling probes for the CPU backend: copy bandwidth and fp32 FMA peak.
 * Built with the kernel toolchain (-O3 -march=native -fopenmp) and run in a worker process
 * with OMP_NUM_THREADS set, so the ceilings match the thread count kernels are timed with. */
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A copy whose stores bypass the cache (no read-for-ownership of the destination): kernels
 * with streaming stores honestly beat memcpy, so the ceiling is the faster of the two. */
static void stream_copy(char *to, const char *from, size_t n) {
    size_t i = 0;
#if defined(__AVX512F__)
    for (; i + 64 <= n; i += 64) _mm512_stream_si512((void *)(to + i), _mm512_loadu_si512(from + i));
#elif defined(__AVX2__)
    for (; i + 32 <= n; i += 32)
        _mm256_stream_si256((__m256i *)(to + i), _mm256_loadu_si256((const __m256i *)(from + i)));
#endif
    memcpy(to + i, from + i, n - i);
}

/* Best copy rate in GB/s (bytes read + written) over `reps` copies of `bytes`-sized buffers,
 * rotating among `sets` source/destination pairs so the working set stays out of cache.
 * `streaming` picks cache-bypassing stores instead of memcpy. */
double kl_copy_gbps(size_t bytes, int sets, int reps, int streaming) {
    char **src = calloc((size_t)sets, sizeof(char *)), **dst = calloc((size_t)sets, sizeof(char *));
    for (int s = 0; s < sets; s++) {
        src[s] = aligned_alloc(64, bytes);
        dst[s] = aligned_alloc(64, bytes);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < bytes; i += 4096) {  /* first touch from the copying threads */
            memset(src[s] + i, (int)(i & 0x7f) + 1, bytes - i < 4096 ? bytes - i : 4096);
            memset(dst[s] + i, 0, bytes - i < 4096 ? bytes - i : 4096);
        }
    }
    double best = 0.0;
    for (int r = 0; r < reps + sets; r++) {
        char *from = src[r % sets], *to = dst[r % sets];
        double t0 = omp_get_wtime();
#pragma omp parallel
        {
            int n = omp_get_num_threads(), t = omp_get_thread_num();
            size_t chunk = (bytes / (size_t)n + 63) & ~(size_t)63;
            size_t lo = chunk * (size_t)t, hi = lo + chunk > bytes ? bytes : lo + chunk;
            if (lo < hi && streaming) stream_copy(to + lo, from + lo, hi - lo);
            else if (lo < hi) memcpy(to + lo, from + lo, hi - lo);
        }
#if defined(__x86_64__)
        _mm_sfence(); /* streaming stores are weakly ordered: finish them inside the timing */
#endif
        double rate = 2.0 * (double)bytes / (omp_get_wtime() - t0) / 1e9;
        if (r >= sets && rate > best) best = rate;  /* first pass over each set is warm-up */
    }
    for (int s = 0; s < sets; s++) { free(src[s]); free(dst[s]); }
    free(src);
    free(dst);
    return best;
}

/* fp32 FMA peak. Independent accumulator chains hide the FMA latency: a core needs about
 * latency x FMA ports of them in flight (4-5 cycles x 2 ports on x86, 4 x 4 on Neoverse V1),
 * and all of them, plus the two constants, must stay in registers. Too many chains for the
 * register file is as bad as too few: twelve 64-byte chains on AVX2 (16 ymm registers) spilled
 * to the stack and read a tenth of the peak. So the width and the chain count follow the target
 * the build was compiled for (-march=native): the widest vectors it has and the registers it
 * has. KL_FMA_BYTES / KL_FMA_CHAINS may be given with -D to probe another shape (tests do). */
#if !defined(KL_FMA_BYTES)
#if defined(__AVX512F__)
#define KL_FMA_BYTES 64   /* 32 zmm registers */
#define KL_FMA_CHAINS 16
#elif defined(__AVX__)
#define KL_FMA_BYTES 32   /* 16 ymm registers: 12 chains + 2 constants */
#define KL_FMA_CHAINS 12
#elif defined(__aarch64__)
#define KL_FMA_BYTES 16   /* 32 NEON registers; up to four 128-bit FMA pipes to fill */
#define KL_FMA_CHAINS 16
#elif defined(__ARM_NEON) || defined(__SSE2__)
#define KL_FMA_BYTES 16   /* 16 registers (32-bit ARM's q0-q15, xmm0-15) */
#define KL_FMA_CHAINS 12
#else
#define KL_FMA_BYTES 4    /* scalar: one float per "vector" */
#define KL_FMA_CHAINS 8
#endif
#endif
#if !defined(KL_FMA_CHAINS)
#define KL_FMA_CHAINS 12
#endif

/* One probe per vector shape: BYTES-wide vectors, CHAINS accumulators per thread, each
 * updated as acc = acc * mul + add (one FMA, or a multiply and an add where the target has no
 * FMA: two flops per lane either way). Returns GFLOP/s over all threads. */
#define KL_DEFINE_FMA_PROBE(NAME, BYTES, CHAINS)                                                \
    static double NAME(double flops_per_thread) {                                               \
        typedef float vec __attribute__((vector_size(BYTES)));                                  \
        enum { lanes = (BYTES) / (int)sizeof(float) };                                          \
        long iters = (long)(flops_per_thread / (2.0 * lanes * (CHAINS))) + 1;                    \
        double total_flops = 0.0, t0 = omp_get_wtime();                                        \
        _Pragma("omp parallel reduction(+ : total_flops)")                                      \
        {                                                                                       \
            vec acc[CHAINS], mul, add;                                                          \
            for (int l = 0; l < lanes; l++) { mul[l] = 0.999999f; add[l] = 1e-7f * (float)l; }  \
            for (int k = 0; k < (CHAINS); k++) acc[k] = add * (float)(k + 1);                   \
            for (long i = 0; i < iters; i++) {                                                  \
                _Pragma("GCC unroll 16")                                                        \
                for (int k = 0; k < (CHAINS); k++) acc[k] = acc[k] * mul + add;                 \
            }                                                                                   \
            float sink = 0.0f;                                                                  \
            for (int k = 0; k < (CHAINS); k++) for (int l = 0; l < lanes; l++) sink += acc[k][l]; \
            if (sink == 12345.678f) total_flops += 1.0; /* keeps the chains alive */             \
            total_flops += (double)iters * (CHAINS) * lanes * 2.0;                              \
        }                                                                                       \
        return total_flops / (omp_get_wtime() - t0) / 1e9;                                      \
    }

KL_DEFINE_FMA_PROBE(fma_target, KL_FMA_BYTES, KL_FMA_CHAINS)

#if KL_FMA_BYTES == 64 && defined(__AVX512F__)
/* Where AVX-512 has one 512-bit FMA unit and two 256-bit ones (some Xeons), or runs 512-bit
 * code at a lower clock, 256-bit vectors reach more: a -march=native kernel may use either,
 * so the ceiling is the faster. AVX-512VL gives 32 ymm registers. */
#define KL_FMA_NARROW_BYTES 32
KL_DEFINE_FMA_PROBE(fma_narrow, 32, 12)
#else
#define KL_FMA_NARROW_BYTES 0
#endif

/* GFLOP/s of `flops_per_thread` fp32 flops on every OpenMP thread: `narrow` 0 probes the
 * target's vectors, 1 the narrower ones where the build has them (0.0 where it has not). */
double kl_fma_gflops(double flops_per_thread, int narrow) {
#if KL_FMA_NARROW_BYTES
    if (narrow) return fma_narrow(flops_per_thread);
#else
    if (narrow) return 0.0;
#endif
    return fma_target(flops_per_thread);
}

/* The vector shape of a probe, for the report and the tests: bytes per vector, chains. */
int kl_fma_bytes(int narrow) { return narrow ? KL_FMA_NARROW_BYTES : KL_FMA_BYTES; }
int kl_fma_chains(int narrow) { return narrow ? (KL_FMA_NARROW_BYTES ? 12 : 0) : KL_FMA_CHAINS; }
