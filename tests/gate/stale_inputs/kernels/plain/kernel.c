#include <math.h>
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
              const double* params, void* stream) {
    (void)params; (void)stream;
    const float* x = inputs[0];
    float* y = outputs[0];
    for (int64_t i = 0; i < axes[0]; i++) {
        double sum = 0.0;
        for (int k = 1; k <= 48; k++) sum += sin(k * (double)x[i]) / k;
        y[i] = (float)sum;
    }
    return 0;
}
