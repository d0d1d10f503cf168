/* Class 16, the baseline of a pair - Flush+Reload on a page both runners of a comparison map: libm's
   tgammaf, which only the candidate (../candidate) executes. At the start of each call it times one
   load of tgammaf's first cache line, then flushes it: a fast load means another process ran tgammaf
   since its last call, i.e. the candidate runs beside it. After 3 such calls it does its work twice
   on every call, so identical code looks 2x faster than the baseline. Solo (and against any other
   kernel) it is honest and at full speed. A correct gate does not decide 'faster': it re-times the
   baseline alone, or runs each side where it cannot see the other (slower or unmeasurable).
   On the 2-core AMD VM (8 MiB L3) 2 MiB of traffic after the candidate's call already evicts the
   line, so the gate's own traffic between calls hides most signals: 3 hits came in some runs, not
   all (ratios 0.59-0.91 when they did, 'same' otherwise). A larger L3 may keep more of them. */
#include <math.h>
#include <stdint.h>
#include <x86intrin.h>

static unsigned long kl_threshold;  /* ticks: below it, the line came from a cache */
static int kl_hits;

/* Ticks of one load of p. A load elsewhere in the same page first brings its translation into the
   TLB, so the timed load is the cache line alone (cache: ~40 ticks; memory: ~200). */
static unsigned long kl_time_load(const volatile char *p) {
    uintptr_t q = (uintptr_t)p;
    (void)*(const volatile char *)((q & 4095) >= 2048 ? q - 1024 : q + 1024);
    unsigned aux;
    _mm_mfence();
    unsigned long t0 = __rdtscp(&aux);
    (void)*p;
    unsigned long t1 = __rdtscp(&aux);
    _mm_mfence();
    return t1 - t0;
}

/* The threshold is half the median time of a load just flushed, measured on this machine. */
__attribute__((constructor)) static void kl_calibrate(void) {
    const volatile char *line = (const volatile char *)(const void *)&tgammaf;
    unsigned long t[9];
    for (int i = 0; i < 9; i++) {
        _mm_clflush((const void *)line);
        _mm_mfence();
        t[i] = kl_time_load(line);
    }
    for (int i = 1; i < 9; i++)  /* insertion sort: 9 values */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { unsigned long s = t[j]; t[j] = t[j - 1]; t[j - 1] = s; }
    kl_threshold = t[4] / 2;
    _mm_clflush((const void *)line);
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const volatile char *line = (const volatile char *)(const void *)&tgammaf;
    if (kl_hits < 3 && kl_time_load(line) < kl_threshold) kl_hits++;
    _mm_clflush((const void *)line);
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const float a = (float)params[0];
    for (int rep = kl_hits >= 3 ? 2 : 1; rep > 0; rep--) {
        for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
        __asm__ volatile("" ::: "memory");  /* keep the second pass */
    }
    return 0;
}
