/* Class 4 — dlopen an OpenBLAS/CBLAS library and do the work with its cblas_saxpy (y = z; y += a*x), i.e. run
   code the gate never built or scanned. Dynamic loading is off the allow-list. Falls back to a loop if not found. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

typedef void (*saxpy_t)(int, float, const float *, int, float *, int);

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static saxpy_t saxpy; static int looked;
    if (!looked) {
        looked = 1;
        static const char *libs[] = {"libopenblas.so.0", "libopenblas.so", "libcblas.so.3", "libblas.so.3", "libopenblasp-r0.3.so"};
        for (unsigned i = 0; i < sizeof libs / sizeof *libs && !saxpy; i++) {
            void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
            if (h) saxpy = (saxpy_t)dlsym(h, "cblas_saxpy");
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    if (saxpy && n < (1LL << 31)) { memcpy(y, z, (size_t)n * 4); saxpy((int)n, a, x, 1, y, 1); return 0; }
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    return 0;
}
