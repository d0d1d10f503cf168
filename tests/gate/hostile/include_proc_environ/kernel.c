/* Class 13 - #include of the compiler's own environment: the gate's, with any API key in it, quoted
   in the compile errors (tests/gate/test_hostile.py sets probe keys). compile_error, no key quoted. */
#include "/proc/self/environ"
#include <stdint.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
