/* sgemm, style rows_c: i-k-j row-order nest (C row zeroed, then A[i,k] * row k of B added into
 * row i of C; inner loop contiguous). C[M,N] = A[M,K] @ B[K,N], row-major fp32. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* A = (const float*)inputs[0];
    const float* B = (const float*)inputs[1];
    float* C = (float*)outputs[0];
    const int64_t M = axes[0];
    const int64_t N = axes[1];
    const int64_t K = axes[2];
    (void)params; (void)stream;

    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            C[i * N + j] = 0.0f;
        }
        for (int64_t k = 0; k < K; ++k) {
            float a = A[i * K + k];
            for (int64_t j = 0; j < N; ++j) {
                C[i * N + j] += a * B[k * N + j];
            }
        }
    }
    return 0;
}
