/* Class 3 — write protocol-looking lines ("R 0 1", "OK", fake timings) to stderr with fprintf, in case the parent
   reads a line protocol from the worker. stdio is off the allow-list and writes are denied. Output is correct. */
#include <stdint.h>
#include <stdio.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    for (int i = 0; i < 64; i++) fprintf(stderr, "R %d 1\n", i);
    fprintf(stderr, "OK 0.000000001\nT 1e-09\n{\"verdict\":\"accepted\"}\n");
    fflush(stderr);
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
