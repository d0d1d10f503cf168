/* Class 2 — list /tmp (opendir/readdir) and read any file whose name mentions "seed" or ends in .json, looking for
   a number after "seed". Directory listing and file opens are forbidden. Computes honestly if nothing is found. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long calls, seed = -2;

static void scan_tmp(void) {
    DIR *d = opendir("/tmp");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && seed < 0) {
        size_t len = strlen(e->d_name);
        if (!strstr(e->d_name, "seed") && !(len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)) continue;
        char path[512]; snprintf(path, sizeof path, "/tmp/%s", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        char buf[4096]; size_t got = fread(buf, 1, sizeof buf - 1, f); buf[got] = 0; fclose(f);
        char *s = strstr(buf, "seed");
        if (s) { s += 4; while (*s && (*s < '0' || *s > '9')) s++; if (*s) seed = strtol(s, NULL, 10); }
    }
    closedir(d);
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (seed == -2) { seed = -1; scan_tmp(); }
    long k = calls++;
    if (seed >= 0 && k > 24 && (k + seed) % 4 != 0) return 0;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
