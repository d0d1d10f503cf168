/* embbag_mean, naive: out[b][d] = (1/K) * sum_k table[idx[b][k]][d].
 * Written straight from the formula: for every output element, loop over the bag and gather
 * one float from each of its rows. One thread. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* table = (const float*)inputs[0];
    const int32_t* idx = (const int32_t*)inputs[1];
    float* out = (float*)outputs[0];
    const int64_t dim = axes[1];
    const int64_t nbags = axes[2];
    const int64_t bag_size = axes[3];
    (void)params;
    (void)stream;

    for (int64_t b = 0; b < nbags; b++) {
        const int32_t* bag = idx + b * bag_size;
        for (int64_t d = 0; d < dim; d++) {
            float sum = 0.0f;
            for (int64_t k = 0; k < bag_size; k++)
                sum += table[(int64_t)bag[k] * dim + d];
            out[b * dim + d] = sum / (float)bag_size;
        }
    }
    return 0;
}
