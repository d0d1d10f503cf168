#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Right answer, but uses an input as scratch space. */
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* p, void* s) {
    float* x = (float*)in[0];
    const float* z = in[1];
    float* y = out[0];
    for (int64_t i = 0; i < axes[0]; i++) { x[i] *= (float)p[0]; y[i] = x[i] + z[i]; }
    return 0;
}
