/* Class 13 - -L/-l/-rpath link a library of the candidate's choice: its code is never scanned (the
   static check reads the kernel's imports and instructions only) and its constructor runs in the
   runner while it loads. The test (tests/gate/test_boundary.py) plants a library whose constructor quotes the secret and exits; without it the flag
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
