/* layernorm_ptr, expert: row-wise LayerNorm, fp32.
 *
 *   shifted one-pass statistics : sum(x - x0) and sum((x - x0)^2) in ONE sweep, shifted by the
 *                                 row's first value so the fp32 sums do not cancel when the
 *                                 mean is large (mean = x0 + S1/N, var = S2/N - (S1/N)^2)
 *   simd reductions             : `omp simd reduction` gives each lane its own partial sums,
 *                                 breaking the serial add chain of the naive loops; a row of
 *                                 N <= 8K floats is then still in L1/L2 for the second sweep
 *   fused normalize             : y = (x - mean) * (rstd * gamma) + beta as one FMA-able pass
 *   OpenMP over rows            : rows are independent; static schedule, contiguous rows/thread
 *   restrict                    : no alias checks around the vector loops
 * Interactions: the shift is what makes the one-pass (sum, sum of squares) form accurate
 * enough; the simd reduction reorders the sums, which the tolerance allows; the second sweep
 * only runs from cache because the statistics take one sweep, not two. */
#include <math.h>
#include <stdint.h>

static void norm_row(const float* restrict row, const float* restrict gamma,
                     const float* restrict beta, float* restrict out, int64_t N, float eps)
{
    const float shift = row[0];
    float s1 = 0.0f, s2 = 0.0f;
#pragma omp simd reduction(+ : s1, s2)
    for (int64_t j = 0; j < N; j++) {
        const float d = row[j] - shift;
        s1 += d;
        s2 += d * d;
    }
    const float inv_n = 1.0f / (float)N;
    const float dmean = s1 * inv_n;                 /* mean - shift */
    float var = s2 * inv_n - dmean * dmean;
    if (var < 0.0f) var = 0.0f;
    const float mean = shift + dmean;
    const float rstd = 1.0f / sqrtf(var + eps);
#pragma omp simd
    for (int64_t j = 0; j < N; j++) out[j] = (row[j] - mean) * (rstd * gamma[j]) + beta[j];
}

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* restrict x = (const float*)inputs[0];
    const float* restrict gamma = (const float*)inputs[1];
    const float* restrict beta = (const float*)inputs[2];
    float* restrict y = (float*)outputs[0];
    const int64_t M = axes[0], N = axes[1];
    const float eps = (float)params[0];
    (void)stream;

#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < M; r++) norm_row(x + r * N, gamma, beta, y + r * N, N, eps);
    return 0;
}
