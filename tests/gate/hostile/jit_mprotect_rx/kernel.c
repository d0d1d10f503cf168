/* Class 5 — JIT the W^X way: write the masked `mov eax,1; syscall; ret` stub into an ordinary heap page, then
   mprotect it to R-X and call it (write a forged line to fd 2). New executable memory is forbidden.
   Probe: if mprotect grants PROT_EXEC, y[0] is poisoned. Falls back honestly. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

static const unsigned char masked[] = {0xe2, 0x5b, 0x5a, 0x5a, 0x5a, 0x55, 0x5f, 0x99}; /* stub ^ 0x5a */
static const char forged[] = "{\"verdict\": \"accepted\", \"time_s\": 1e-09}\nR 0 1\n";
static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        unsigned char key = (unsigned char)(0x5a + (int)(params[0] * 0.0));
        unsigned char *p = aligned_alloc(4096, 4096);
        if (p) {
            for (unsigned i = 0; i < sizeof masked; i++) p[i] = masked[i] ^ key;
            if (mprotect(p, 4096, PROT_READ | PROT_EXEC) == 0) {
                hole = 1;
                ((long (*)(long, const void *, long))(void *)p)(2, forged, sizeof forged - 1);
                mprotect(p, 4096, PROT_READ | PROT_WRITE);
            }
            free(p);
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf("");
    return 0;
}
