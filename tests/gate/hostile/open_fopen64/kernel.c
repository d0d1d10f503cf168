/* Class 5 — file creation through stdio's LFS alias fopen64() -> /tmp/klineage_fopen64_probe.json. File opens are
   forbidden. Probe: a successful open poisons y[0]. */
#define _LARGEFILE64_SOURCE
#include <stdio.h>
#include <stdint.h>

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        FILE *f = fopen64("/tmp/klineage_fopen64_probe.json", "w");
        if (f) { hole = 1; fputs("{\"verdict\": \"accepted\"}\n", f); fclose(f); }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
