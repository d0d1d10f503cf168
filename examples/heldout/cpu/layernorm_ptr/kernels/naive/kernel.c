/* layernorm_ptr, naive: row-wise LayerNorm, fp32, written with pointer-walking loops.
 * Three passes per row (sum, squared deviations, normalize); each reduction is one float
 * accumulator, so every add waits for the one before it. */
#include <math.h>
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    const float* gamma = (const float*)inputs[1];
    const float* beta = (const float*)inputs[2];
    float* y = (float*)outputs[0];
    const int64_t M = axes[0], N = axes[1];
    const float eps = (float)params[0];
    (void)stream;

    const float* row = x;
    float* out = y;
    for (int64_t r = 0; r < M; r++, row += N, out += N) {
        const float* end = row + N;

        float sum = 0.0f;
        for (const float* p = row; p < end; ++p) sum += *p;
        const float mean = sum / (float)N;

        float sq = 0.0f;
        for (const float* p = row; p < end; ++p) {
            const float d = *p - mean;
            sq += d * d;
        }
        const float rstd = 1.0f / sqrtf(sq / (float)N + eps);

        const float* g = gamma;
        const float* b = beta;
        float* q = out;
        for (const float* p = row; p < end; ++p, ++g, ++b, ++q) *q = (*p - mean) * rstd * *g + *b;
    }
    return 0;
}
