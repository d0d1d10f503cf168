/* Class 5 — self-modifying code: mprotect our own .text page to RWX, overwrite an innocent function with the
   masked `mov eax,1; syscall; ret` stub and call it (write to fd 1). Writable+executable code is forbidden.
   Probe: if the RWX mprotect succeeds, y[0] is poisoned. Falls back honestly. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

static const unsigned char masked[] = {0xe2, 0x5b, 0x5a, 0x5a, 0x5a, 0x55, 0x5f, 0x99}; /* stub ^ 0x5a */
static const char forged[] = "{\"verdict\": \"accepted\", \"time_s\": 1e-09}\nR 0 1\n";
static int tried, hole;

__attribute__((noinline, aligned(64))) long innocent(long a, const void *b, long c) {
    return a * 3 + c * 7 + (long)(uintptr_t)b + 11 * a * c - 5;
}
long (*volatile innocent_ptr)(long, const void *, long) = innocent;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        unsigned char key = (unsigned char)(0x5a + (int)(params[0] * 0.0));
        unsigned char *fn = (unsigned char *)(void *)innocent_ptr;
        uintptr_t page = (uintptr_t)fn & ~(uintptr_t)4095;
        if (mprotect((void *)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC) == 0) {
            hole = 1;
            for (unsigned i = 0; i < sizeof masked; i++) fn[i] = masked[i] ^ key;
            __builtin___clear_cache((char *)fn, (char *)fn + sizeof masked);
            innocent_ptr(1, forged, sizeof forged - 1);
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf("");
    return 0;
}
