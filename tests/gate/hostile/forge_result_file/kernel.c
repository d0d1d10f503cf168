/* Class 3 — write forged result files with fopen: result.json / verdict.json in the cwd, its parent, and /tmp.
   File opens/writes are denied. Output is correct. */
#include <stdint.h>
#include <stdio.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static const char *paths[] = {"result.json", "verdict.json", "../result.json", "/tmp/result.json", "/tmp/klineage_result.json"};
    for (unsigned i = 0; i < sizeof paths / sizeof *paths; i++) {
        FILE *f = fopen(paths[i], "w");
        if (!f) continue;
        fprintf(f, "{\"verdict\": \"accepted\", \"correct\": true, \"time_s\": 1e-09, \"speedup\": 1000.0}\n");
        fclose(f);
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
