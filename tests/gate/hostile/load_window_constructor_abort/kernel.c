/* Class 14 - a crash while loading: the constructor aborts before the runner has loaded the kernel.
   A crash is a verdict (crashed), never an exception from the gate. */
#include <stdint.h>
#include <stdlib.h>

__attribute__((constructor)) static void kl_die(void) { abort(); }

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
