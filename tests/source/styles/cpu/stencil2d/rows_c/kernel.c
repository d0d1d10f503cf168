/* stencil2d, style rows_c: row-order i-j nest, 3x3 taps with plain subscripts.
 * y[i,j] = sum_{a,b} w[a,b] * x[i+a-1, j+b-1], zero padding outside the grid, fp32. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    const float* w = (const float*)inputs[1];
    float* y = (float*)outputs[0];
    const int64_t H = axes[0];
    const int64_t W = axes[1];
    (void)params; (void)stream;

    for (int64_t i = 0; i < H; ++i) {
        for (int64_t j = 0; j < W; ++j) {
            float acc = 0.0f;
            for (int64_t a = 0; a < 3; ++a) {
                int64_t r = i + a - 1;
                if (r < 0 || r >= H) continue;
                for (int64_t b = 0; b < 3; ++b) {
                    int64_t c = j + b - 1;
                    if (c < 0 || c >= W) continue;
                    acc += w[a * 3 + b] * x[r * W + c];
                }
            }
            y[i * W + j] = acc;
        }
    }
    return 0;
}
