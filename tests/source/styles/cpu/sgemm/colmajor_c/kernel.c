/* sgemm, style colmajor_c: j-i-k column-order nest (one column of C at a time, dot product
 * innermost). C[M,N] = A[M,K] @ B[K,N], row-major fp32. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* A = (const float*)inputs[0];
    const float* B = (const float*)inputs[1];
    float* C = (float*)outputs[0];
    int64_t M = axes[0], N = axes[1], K = axes[2];
    (void)params; (void)stream;

    for (int64_t j = 0; j < N; j++) {
        for (int64_t i = 0; i < M; i++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                acc += A[i * K + k] * B[k * N + j];
            }
            C[i * N + j] = acc;
        }
    }
    return 0;
}
