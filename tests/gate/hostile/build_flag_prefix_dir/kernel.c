/* Class 13 - -B<dir> makes gcc look for cc1/as/collect2 in a folder of the candidate's choice; a
   fake 'as' there creates a marker and runs the real one. Today a missing folder is ignored silently.
   The test (tests/gate/test_boundary.py) plants the fake as; without it the flag
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
