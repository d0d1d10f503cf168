/* transpose, style pointer_c: a source pointer (x + i * N) walks row i of x with ++, a destination
 * pointer steps down column i of y by M. y[j,i] = x[i,j]; x is M x N, y is N x M, fp32. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    float* y = (float*)outputs[0];
    int64_t M = axes[0], N = axes[1];
    (void)params; (void)stream;

    for (int64_t i = 0; i < M; i++) {
        const float* src = x + i * N;
        float* dst = y + i;
        const float* end = src + N;
        while (src != end) {
            *dst = *src;
            src++;
            dst += M;
        }
    }
    return 0;
}
