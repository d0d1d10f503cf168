/* stencil_colmajor, naive: 5-point stencil, zero padding, fp32, row-major grid.
 * Written column by column (j outer, i inner) as if the grid were column-major: consecutive
 * iterations touch addresses W floats apart, and every point tests all four borders. */
#include <stdint.h>

#define AT(g, i, j) (g)[(i) * W + (j)]

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    float* y = (float*)outputs[0];
    const int64_t H = axes[0], W = axes[1];
    const float c = (float)params[0], n = (float)params[1], s = (float)params[2];
    const float w = (float)params[3], e = (float)params[4];
    (void)stream;

    for (int64_t j = 0; j < W; j++) {
        for (int64_t i = 0; i < H; i++) {
            float v = c * AT(x, i, j);
            if (i > 0)     v += n * AT(x, i - 1, j);
            if (i + 1 < H) v += s * AT(x, i + 1, j);
            if (j > 0)     v += w * AT(x, i, j - 1);
            if (j + 1 < W) v += e * AT(x, i, j + 1);
            AT(y, i, j) = v;
        }
    }
    return 0;
}
