/* sgemm, style pointer_c: i-j-k with pointers: a walks row i of A with ++, b steps down column j
 * of B by N, c walks row i of C. C[M,N] = A[M,K] @ B[K,N], row-major fp32. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* A = (const float*)inputs[0];
    const float* B = (const float*)inputs[1];
    float* C = (float*)outputs[0];
    int64_t M = axes[0], N = axes[1], K = axes[2];
    (void)params; (void)stream;

    for (int64_t i = 0; i < M; i++) {
        const float* arow = A + i * K;
        float* c = C + i * N;
        for (int64_t j = 0; j < N; j++, c++) {
            const float* a = arow;
            const float* b = B + j;
            const float* aend = arow + K;
            float sum = 0.0f;
            while (a != aend) {
                sum += *a * *b;
                a++;
                b += N;
            }
            *c = sum;
        }
    }
    return 0;
}
