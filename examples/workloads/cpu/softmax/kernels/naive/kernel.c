/* softmax, naive: row softmax over the last axis of x[M,N], fp32.
 * Three plain passes per row: max, exp + sum, divide. */
#include <math.h>
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    float* y = (float*)outputs[0];
    int64_t M = axes[0], N = axes[1];
    (void)params; (void)stream;

    for (int64_t i = 0; i < M; i++) {
        float m = x[i * N];
        for (int64_t j = 1; j < N; j++) {
            if (x[i * N + j] > m) m = x[i * N + j];
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < N; j++) {
            float e = expf(x[i * N + j] - m);
            y[i * N + j] = e;
            sum += e;
        }
        for (int64_t j = 0; j < N; j++) {
            y[i * N + j] = y[i * N + j] / sum;
        }
    }
    return 0;
}
