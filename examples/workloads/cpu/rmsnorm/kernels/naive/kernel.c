/* rmsnorm, naive: y[i,j] = x[i,j] * rsqrt(mean(x[i,:]^2) + eps) * w[j], fp32. */
#include <math.h>
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    const float* w = (const float*)inputs[1];
    float* y = (float*)outputs[0];
    int64_t M = axes[0], N = axes[1];
    float eps = (float)params[0];
    (void)stream;

    for (int64_t i = 0; i < M; i++) {
        float ss = 0.0f;
        for (int64_t j = 0; j < N; j++) {
            ss += x[i * N + j] * x[i * N + j];
        }
        float r = 1.0f / sqrtf(ss / (float)N + eps);
        for (int64_t j = 0; j < N; j++) {
            y[i * N + j] = x[i * N + j] * r * w[j];
        }
    }
    return 0;
}
