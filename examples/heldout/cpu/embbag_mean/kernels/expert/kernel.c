/* embbag_mean, expert: out[b][:] = mean_k table[idx[b][k]][:], fp32 table [V][D], int32 idx.
 *
 *   row-order gather  : the bag loop is inside the column loop, the other way round from the
 *                       formula: each gathered row is read as a contiguous run of floats
 *   register chunks   : columns go in chunks of 64 floats (four AVX-512 vectors) held in a
 *                       fixed-size accumulator that the compiler keeps in registers across the
 *                       whole bag; a narrower last chunk uses the same code with a variable width
 *   software prefetch : while one bag is summed, every cache line of the next bag's rows is
 *                       prefetched (the row addresses are random, so the hardware prefetcher
 *                       cannot guess them)
 *   reciprocal scale  : one multiply by 1/K per output instead of a divide
 *   OpenMP            : static split of the bags; threads only when there is enough work
 *   restrict          : table, idx and out never alias
 * Interactions: the prefetch distance is one bag, so it only pays when a bag's rows fit in L1/L2
 * (K * D * 4 bytes, 16 KiB at the benchmark size); the chunk loop outside the bag loop re-reads
 * each row once per chunk, from cache, which is why the prefetch covers whole rows. */
#include <stdint.h>

enum { kChunk = 64, kLine = 16 };  /* floats per register chunk; floats per cache line */

static inline void prefetch_bag(const float* restrict table, const int32_t* restrict bag,
                                int64_t k_count, int64_t dim)
{
    for (int64_t k = 0; k < k_count; k++) {
        const float* row = table + (int64_t)bag[k] * dim;
        for (int64_t d = 0; d < dim; d += kLine) __builtin_prefetch(row + d, 0, 2);
    }
}

static inline void bag_chunk(const float* restrict table, const int32_t* restrict bag,
                             int64_t k_count, int64_t dim, int64_t c0, float scale,
                             float* restrict out)
{
    float acc[kChunk];
#pragma omp simd
    for (int t = 0; t < kChunk; t++) acc[t] = 0.0f;
    for (int64_t k = 0; k < k_count; k++) {
        const float* restrict row = table + (int64_t)bag[k] * dim + c0;
#pragma omp simd
        for (int t = 0; t < kChunk; t++) acc[t] += row[t];
    }
#pragma omp simd
    for (int t = 0; t < kChunk; t++) out[c0 + t] = acc[t] * scale;
}

static inline void bag_tail(const float* restrict table, const int32_t* restrict bag,
                            int64_t k_count, int64_t dim, int64_t c0, int64_t width, float scale,
                            float* restrict out)
{
    float acc[kChunk];
    for (int64_t t = 0; t < width; t++) acc[t] = 0.0f;
    for (int64_t k = 0; k < k_count; k++) {
        const float* restrict row = table + (int64_t)bag[k] * dim + c0;
#pragma omp simd
        for (int64_t t = 0; t < width; t++) acc[t] += row[t];
    }
#pragma omp simd
    for (int64_t t = 0; t < width; t++) out[c0 + t] = acc[t] * scale;
}

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* restrict table = (const float*)inputs[0];
    const int32_t* restrict idx = (const int32_t*)inputs[1];
    float* restrict out = (float*)outputs[0];
    const int64_t dim = axes[1];
    const int64_t nbags = axes[2];
    const int64_t k_count = axes[3];
    (void)params;
    (void)stream;

    const float scale = 1.0f / (float)k_count;
    const int64_t full = dim / kChunk * kChunk;
    const int threaded = nbags * k_count * dim >= (int64_t)1 << 16;
    (void)threaded;  /* unused without OpenMP */

#pragma omp parallel for schedule(static) if (threaded)
    for (int64_t b = 0; b < nbags; b++) {
        const int32_t* restrict bag = idx + b * k_count;
        if (b + 1 < nbags) prefetch_bag(table, bag + k_count, k_count, dim);
        float* restrict o = out + b * dim;
        for (int64_t c0 = 0; c0 < full; c0 += kChunk)
            bag_chunk(table, bag, k_count, dim, c0, scale, o);
        if (full < dim) bag_tail(table, bag, k_count, dim, full, dim - full, scale, o);
    }
    return 0;
}
