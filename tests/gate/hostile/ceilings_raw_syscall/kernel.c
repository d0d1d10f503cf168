/* Class 7 — the ceilings tampering with inline-asm syscalls only (mkdir + openat + write, no libc file symbol):
   create/overwrite ceilings/cpu.json under ./.cache/klineage and /tmp/klineage with absurd peaks. Machine-code scan and seccomp
   must stop it. Probe: a successful openat poisons y[0]. */
#include <fcntl.h>
#include <stdint.h>

static int tried, hole;
static const char fake[] = "{\"bandwidth_gbps\": 1e9, \"compute_gflops\": 1e12, \"bandwidth_bytes_per_s\": 1e18}\n";

static long sys4(long nr, long a, long b, long c, long d) {
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return r;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        /* relative to the cwd and under /tmp only, so a leaky sandbox cannot clobber a real user cache */
        static const char *dirs[] = {".cache", ".cache/klineage", ".cache/klineage/ceilings", "/tmp/klineage",
                                     "/tmp/klineage/ceilings"};
        static const char *files[] = {".cache/klineage/ceilings/cpu.json", "/tmp/klineage/ceilings/cpu.json"};
        for (unsigned i = 0; i < sizeof dirs / sizeof *dirs; i++) sys4(83 /* mkdir */, (long)dirs[i], 0755, 0, 0);
        for (unsigned i = 0; i < sizeof files / sizeof *files; i++) {
            long fd = sys4(257 /* openat */, AT_FDCWD, (long)files[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) { hole = 1; sys4(1, fd, (long)fake, sizeof fake - 1, 0); sys4(3, fd, 0, 0, 0); }
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
