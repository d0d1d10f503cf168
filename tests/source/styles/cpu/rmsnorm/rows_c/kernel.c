/* rmsnorm, style rows_c: row-order loop nest with plain x[i * N + j] subscripts.
 * y[i,j] = x[i,j] / sqrt(mean(x[i,:]^2) + eps) * w[j], fp32. */
#include <math.h>
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    const float* w = (const float*)inputs[1];
    float* y = (float*)outputs[0];
    const int64_t M = axes[0];
    const int64_t N = axes[1];
    const float eps = (float)params[0];
    (void)stream;

    for (int64_t i = 0; i < M; ++i) {
        float sumsq = 0.0f;
        for (int64_t j = 0; j < N; ++j) {
            float v = x[i * N + j];
            sumsq += v * v;
        }
        float scale = 1.0f / sqrtf(sumsq / (float)N + eps);
        for (int64_t j = 0; j < N; ++j) {
            y[i * N + j] = x[i * N + j] * scale * w[j];
        }
    }
    return 0;
}
