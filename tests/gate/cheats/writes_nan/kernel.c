#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>
/* Right everywhere but one element, which is NaN. */
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* p, void* s) {
    const float *x = in[0], *z = in[1];
    float* y = out[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = (float)p[0] * x[i] + z[i];
    y[axes[0] / 2] = NAN;
    return 0;
}
