/* cumsum_ptr, naive: row-wise inclusive prefix sum, fp32, as a pointer walk.
 * One running float per row: every element's add waits for the previous one. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* src = (const float*)inputs[0];
    float* dst = (float*)outputs[0];
    const int64_t M = axes[0], N = axes[1];
    (void)params; (void)stream;

    const float* const last = src + M * N;
    while (src != last) {
        const float* const row_end = src + N;
        float run = 0.0f;
        while (src != row_end) {
            run += *src++;
            *dst++ = run;
        }
    }
    return 0;
}
