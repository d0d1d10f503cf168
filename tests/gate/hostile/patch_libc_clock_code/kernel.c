/* Class 12 — patch libc's clock_gettime CODE in this process: mprotect its page RWX and plant a jump to an
   rdtsc-based fake that runs monotonic clocks 1000x slow, so any in-process timer (the harness's included) reads
   ~0. Writable code is forbidden; if it gets through, the outside clock must catch the lie. Falls back honestly. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <x86intrin.h>

/* a replacement clock_gettime that needs no other clock: rdtsc, calibrated once, monotonic clocks 1000x slow */
static int64_t base_ns[16]; static uint64_t tsc0; static double ns_per_tick;

static int fake_cgt(clockid_t c, struct timespec *ts) {
    if (c < 0 || c >= 16) c = CLOCK_MONOTONIC;
    double elapsed = (double)(__rdtsc() - tsc0) * ns_per_tick;
    int64_t ns = base_ns[c] + (int64_t)(c == CLOCK_REALTIME ? elapsed : elapsed / 1000);
    ts->tv_sec = ns / 1000000000LL; ts->tv_nsec = ns % 1000000000LL;
    return 0;
}

static void calibrate(void) {
    struct timespec a, b, ts;
    for (int c = 0; c < 16; c++) if (clock_gettime(c, &ts) == 0) base_ns[c] = ts.tv_sec * 1000000000LL + ts.tv_nsec;
    clock_gettime(CLOCK_MONOTONIC, &a); tsc0 = __rdtsc();
    do clock_gettime(CLOCK_MONOTONIC, &b); while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < 5000000LL);
    ns_per_tick = (double)((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec)) / (double)(__rdtsc() - tsc0);
}

/* overwrite code at target with: movabs rax, fake_cgt ; jmp rax */
static int plant_jump(unsigned char *target) {
    uintptr_t page = (uintptr_t)target & ~(uintptr_t)4095;
    if (mprotect((void *)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return 0;
    uint64_t dest = (uint64_t)(uintptr_t)fake_cgt;
    target[0] = 0x48; target[1] = 0xb8; memcpy(target + 2, &dest, 8); target[10] = 0xff; target[11] = 0xe0;
    __builtin___clear_cache((char *)target, (char *)target + 12);
    mprotect((void *)page, 8192, PROT_READ | PROT_EXEC);
    return 1;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static int patched;
    if (!patched) {
        patched = 1;
        calibrate();
        plant_jump((unsigned char *)(void *)clock_gettime);
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
