/* Class 13 - a specs file redefines *linker: to a script of the candidate's choice, which creates a
   marker and then runs the real collect2. The test (tests/gate/test_boundary.py) plants the specs file and the script; without it the flag
   still must be refused. */
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
