/* Row softmax with the row's max subtracted first. */
#include <math.h>
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
              const double* params, void* stream) {
    (void)params; (void)stream;
    const float* x = inputs[0];
    float* y = outputs[0];
    for (int64_t i = 0; i < axes[0]; i++) {
        const float* row = x + i * axes[1];
        float* out = y + i * axes[1];
        float top = row[0], sum = 0.0f;
        for (int64_t j = 1; j < axes[1]; j++) top = row[j] > top ? row[j] : top;
        for (int64_t j = 0; j < axes[1]; j++) sum += out[j] = expf(row[j] - top);
        for (int64_t j = 0; j < axes[1]; j++) out[j] /= sum;
    }
    return 0;
}
