/* transpose, style rows_c: row-order nest over x (reads contiguous, writes strided by M).
 * y[j,i] = x[i,j]; x is M x N, y is N x M, fp32. */
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
        for (int64_t j = 0; j < N; ++j) {
            y[j * M + i] = x[i * N + j];
        }
    }
    return 0;
}
