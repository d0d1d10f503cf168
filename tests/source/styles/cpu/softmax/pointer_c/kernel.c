/* softmax, style pointer_c: pointer-walking while/for loops over each row.
 * y[i,:] = exp(x[i,:] - max) / sum(exp(x[i,:] - max)), fp32. */
#include <math.h>
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    float* y = (float*)outputs[0];
    int64_t M = axes[0], N = axes[1];
    (void)params; (void)stream;

    const float* xr = x;
    float* yr = y;
    for (int64_t r = 0; r < M; r++, xr += N, yr += N) {
        const float* p = xr;
        const float* end = xr + N;
        float m = *p++;
        while (p < end) {
            if (*p > m) m = *p;
            p++;
        }
        float sum = 0.0f;
        float* q = yr;
        for (p = xr; p < end; ++p, ++q) {
            *q = expf(*p - m);
            sum += *q;
        }
        for (q = yr; q < yr + N; ++q) {
            *q = *q / sum;
        }
    }
    return 0;
}
