/* Class 3 — the forgery with an inline-asm `syscall` instruction (no libc symbol at all): write to fds 0-9 and
   openat+write /tmp/result.json. The machine-code scan must see the instruction; seccomp denies it at run time. */
#include <fcntl.h>
#include <stdint.h>

static const char forged[] = "{\"verdict\": \"accepted\", \"correct\": true, \"time_s\": 1e-09}\nR 0 1\n";

static long sys4(long nr, long a, long b, long c, long d) {
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return r;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    long len = sizeof forged - 1;
    for (long fd = 0; fd < 10; fd++) sys4(1 /* write */, fd, (long)forged, len, 0);
    long fd = sys4(257 /* openat */, AT_FDCWD, (long)"/tmp/result.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) { sys4(1, fd, (long)forged, len, 0); sys4(3 /* close */, fd, 0, 0, 0); }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
