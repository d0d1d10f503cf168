/* softmax, style rows_c: row-order loop nest with plain x[i * N + j] subscripts.
 * y[i,:] = exp(x[i,:] - max) / sum(exp(x[i,:] - max)), fp32; max, exp+sum, scale passes. */
#include <math.h>
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    float* y = (float*)outputs[0];
    const int64_t M = axes[0];
    const int64_t N = axes[1];
    (void)params; (void)stream;

    for (int64_t i = 0; i < M; ++i) {
        float mx = -INFINITY;
        for (int64_t j = 0; j < N; ++j) {
            mx = fmaxf(mx, x[i * N + j]);
        }
        float total = 0.0f;
        for (int64_t j = 0; j < N; ++j) {
            y[i * N + j] = expf(x[i * N + j] - mx);
            total += y[i * N + j];
        }
        float inv = 1.0f / total;
        for (int64_t j = 0; j < N; ++j) {
            y[i * N + j] *= inv;
        }
    }
    return 0;
}
