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

typedef float kl_vec __attribute__((vector_size(64)));

/* fp32 FMA peak in GFLOP/s: twelve independent accumulator chains per thread hide latency. */
double kl_fma_gflops(long iters) {
    double total_flops = 0.0, t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : total_flops)
    {
        kl_vec acc[12], mul, add;
        for (int l = 0; l < 16; l++) { mul[l] = 0.999999f; add[l] = 1e-7f * (float)l; }
        for (int k = 0; k < 12; k++) acc[k] = add * (float)(k + 1);
        for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
            for (int k = 0; k < 12; k++) acc[k] = acc[k] * mul + add;
        }
        float sink = 0.0f;
        for (int k = 0; k < 12; k++) for (int l = 0; l < 16; l++) sink += acc[k][l];
        if (sink == 12345.678f) total_flops += 1.0;  /* keeps the chains alive */
        total_flops += (double)iters * 12.0 * 16.0 * 2.0;
    }
    return total_flops / (omp_get_wtime() - t0) / 1e9;
}
