/* transpose, style colmajor_c: column-order nest over x, i.e. row order over y (writes contiguous,
 * reads strided by N). y[j,i] = x[i,j]; x is M x N, y is N x M, fp32. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    float* y = (float*)outputs[0];
    int64_t M = axes[0], N = axes[1];
    (void)params; (void)stream;

    for (int64_t j = 0; j < N; j++) {
        for (int64_t i = 0; i < M; i++) {
            y[j * M + i] = x[i * N + j];
        }
    }
    return 0;
}
