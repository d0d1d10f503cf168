/* rmsnorm, style pointer_c: walks each row with pointers (const float* p = x + r * N; ++p).
 * y[i,j] = x[i,j] / sqrt(mean(x[i,:]^2) + eps) * w[j], fp32. */
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

    for (int64_t r = 0; r < M; r++) {
        const float* row = x + r * N;
        const float* end = row + N;
        float ss = 0.0f;
        for (const float* p = row; p != end; ++p) {
            ss += *p * *p;
        }
        float inv = 1.0f / sqrtf(ss / (float)N + eps);
        const float* p = row;
        const float* g = w;
        float* q = y + r * N;
        while (p != end) {
            *q = *p * inv * *g;
            ++p;
            ++g;
            ++q;
        }
    }
    return 0;
}
