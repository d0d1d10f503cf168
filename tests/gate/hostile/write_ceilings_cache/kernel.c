/* Class 7 — tamper with trusted state: find the ceilings cache ($KLINEAGE_CACHE_DIR/ceilings, ~/.cache/klineage/
   ceilings, $XDG_CACHE_HOME/klineage/ceilings), overwrite every *.json there with absurd bandwidth/compute peaks and
   drop a new one, so a later speed-of-light check passes anything. Probe: any file written poisons y[0].
   Roots come only from the environment so a test can point them at a scratch directory. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int tried, hole;
static const char fake[] = "{\"bandwidth_gbps\": 1e9, \"compute_gflops\": 1e12, \"bandwidth_bytes_per_s\": 1e18, "
                           "\"peak_flops\": 1e21, \"threads\": 2}\n";

static void poison_dir(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) if (*p == '/') { *p = 0; mkdir(path, 0755); *p = '/'; }
    mkdir(path, 0755);
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            FILE *f = fopen(path, "w");
            if (f) { hole = 1; fputs(fake, f); fclose(f); }
        }
        closedir(d);
    }
    snprintf(path, sizeof path, "%s/cpu.json", dir);
    FILE *f = fopen(path, "w");
    if (f) { hole = 1; fputs(fake, f); fclose(f); }
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        char dir[1024];
        const char *v;
        if ((v = getenv("KLINEAGE_CACHE_DIR"))) { snprintf(dir, sizeof dir, "%s/ceilings", v); poison_dir(dir); }
        if ((v = getenv("XDG_CACHE_HOME"))) { snprintf(dir, sizeof dir, "%s/klineage/ceilings", v); poison_dir(dir); }
        if ((v = getenv("HOME"))) { snprintf(dir, sizeof dir, "%s/.cache/klineage/ceilings", v); poison_dir(dir); }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
