/* axpby_flat, naive: out[i] = a*x[i] + b*y[i], one flat loop over a 1-D index, one thread. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    const float* y = (const float*)inputs[1];
    float* out = (float*)outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0], b = (float)params[1];
    (void)stream;

    for (int64_t i = 0; i < n; i++) out[i] = a * x[i] + b * y[i];
    return 0;
}
