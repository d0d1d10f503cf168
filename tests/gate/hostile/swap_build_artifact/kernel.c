/* Class 7 — swap a build artifact: walk the klineage caches with nftw and overwrite every build/cpu/.../kernel.so
   (e.g. the baseline's) with a copy of this very shared object (found via dladdr), so the "baseline" becomes this
   kernel. Build artifacts are trusted state. Probe: any artifact written poisons y[0]. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tried, hole;
static char *self_bytes; static size_t self_len;
static const char *self_path;

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st; (void)ftw;
    if (type != FTW_F || !strstr(path, "/build/cpu/")) return 0;
    size_t len = strlen(path);
    if (len < 9 || strcmp(path + len - 9, "kernel.so") != 0 || (self_path && strcmp(path, self_path) == 0)) return 0;
    FILE *f = fopen(path, "wb");
    if (f) { hole = 1; fwrite(self_bytes, 1, self_len, f); fclose(f); }
    return 0;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream);

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        Dl_info info;
        if (dladdr((void *)kl_launch, &info) && info.dli_fname) {
            self_path = info.dli_fname;
            FILE *f = fopen(self_path, "rb");
            if (f) {
                fseek(f, 0, SEEK_END); long len = ftell(f); fseek(f, 0, SEEK_SET);
                self_bytes = len > 0 ? malloc((size_t)len) : NULL;
                if (self_bytes) self_len = fread(self_bytes, 1, (size_t)len, f);
                fclose(f);
            }
        }
        if (self_bytes) {
            char dir[1024];
            const char *v;
            if ((v = getenv("KLINEAGE_CACHE_DIR"))) nftw(v, visit, 32, FTW_PHYS);
            if ((v = getenv("HOME"))) { snprintf(dir, sizeof dir, "%s/.cache/klineage", v); nftw(dir, visit, 32, FTW_PHYS); }
            if ((v = getenv("XDG_CACHE_HOME"))) { snprintf(dir, sizeof dir, "%s/klineage", v); nftw(dir, visit, 32, FTW_PHYS); }
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
