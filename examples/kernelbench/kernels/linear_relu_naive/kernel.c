/* 1_linear_relu, naive: out[b, o] = max(0, sum_i x[b, i] * proj_weight[o, i] + proj_bias[o]), fp32.
   Inputs in the imported workload's order: x, then the Linear's weight and bias; axes in the
   problem file's order: batch_size, in_features, out_features. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* x = (const float*)inputs[0];
    const float* weight = (const float*)inputs[1];
    const float* bias = (const float*)inputs[2];
    float* out = (float*)outputs[0];
    int64_t batch = axes[0], in_features = axes[1], out_features = axes[2];
    (void)params;
    (void)stream;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t o = 0; o < out_features; o++) {
            float acc = bias[o];
            for (int64_t i = 0; i < in_features; i++) {
                acc += x[b * in_features + i] * weight[o * in_features + i];
            }
            out[b * out_features + o] = acc > 0.0f ? acc : 0.0f;
        }
    }
    return 0;
}
