/* Class 4 — read /proc/self/maps to find where libpython / BLAS / the harness live in memory (first step of any
   memory-patching attack). File opens are forbidden. Probe: if the read works it poisons y[0] (leak -> incorrect). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        FILE *f = fopen("/proc/self/maps", "r");
        if (f) {
            char line[512];
            while (fgets(line, sizeof line, f)) {
                hole = 1; /* any line read means the sandbox let the open through */
                if (strstr(line, "python") || strstr(line, "blas")) { /* a real attack would parse these ranges */ }
            }
            fclose(f);
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf("");
    return 0;
}
