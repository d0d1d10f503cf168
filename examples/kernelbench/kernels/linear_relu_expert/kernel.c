/* 1_linear_relu, expert: out[b, o] = max(0, sum_i x[b, i] * proj_weight[o, i] + proj_bias[o]), fp32.
 * Written for this example so that `klineage mine` has something to walk back on an imported
 * workload. Optimizations (each a separate construct a removal pass can take out):
 *   omp_parallel : #pragma omp parallel for over the batch rows
 *   omp_simd     : #pragma omp simd reduction over the dot product's inner loop
 *   restrict     : restrict-qualified x / weight / bias / out pointers
 */
#include <stdint.h>

static void row(const float* restrict x, const float* restrict weight, const float* restrict bias,
                float* restrict out, int64_t in_features, int64_t out_features)
{
    for (int64_t o = 0; o < out_features; o++) {
        const float* restrict w = weight + o * in_features;
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t i = 0; i < in_features; i++) {
            acc += x[i] * w[i];
        }
        acc += bias[o];
        out[o] = acc > 0.0f ? acc : 0.0f;
    }
}

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* restrict x = (const float*)inputs[0];
    const float* restrict weight = (const float*)inputs[1];
    const float* restrict bias = (const float*)inputs[2];
    float* restrict out = (float*)outputs[0];
    int64_t batch = axes[0], in_features = axes[1], out_features = axes[2];
    (void)params;
    (void)stream;
#pragma omp parallel for
    for (int64_t b = 0; b < batch; b++) {
        row(x + b * in_features, weight, bias, out + b * out_features, in_features, out_features);
    }
    return 0;
}
