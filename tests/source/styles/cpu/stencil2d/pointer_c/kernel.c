/* stencil2d, style pointer_c: row pointers for the rows above/at/below, an output pointer walked
 * with ++; y[i,j] = sum_{a,b} w[a,b] * x[i+a-1, j+b-1], zero padding, fp32. */
#include <stddef.h>
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    const float* w = (const float*)inputs[1];
    float* y = (float*)outputs[0];
    int64_t H = axes[0], W = axes[1];
    (void)params; (void)stream;

    float* out = y;
    for (int64_t i = 0; i < H; i++) {
        const float* rows[3];
        rows[0] = (i > 0) ? x + (i - 1) * W : NULL;
        rows[1] = x + i * W;
        rows[2] = (i + 1 < H) ? x + (i + 1) * W : NULL;
        for (int64_t j = 0; j < W; j++, out++) {
            float sum = 0.0f;
            const float* wp = w;
            for (int a = 0; a < 3; a++, wp += 3) {
                const float* src = rows[a];
                if (src == NULL) continue;
                if (j > 0) sum += wp[0] * src[j - 1];
                sum += wp[1] * src[j];
                if (j + 1 < W) sum += wp[2] * src[j + 1];
            }
            *out = sum;
        }
    }
    return 0;
}
