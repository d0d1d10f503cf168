/* The gate's calibration kernel (trusted code), run in a runner of its own so the trusted side
 * learns what its clock sees beyond an honest kernel's clock (the round trip, the wake-ups, the
 * caches the kernel's memory traffic evicted). It reads every input and writes every output of
 * the set it is given, as an honest kernel would, then busy-waits until params[0] seconds have
 * passed by its own clock. axes: n_inputs, n_outputs, then each input's and output's bytes. */
#include <stdint.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
              const double* params, void* stream) {
    (void)stream;
    double start = now();
    int64_t n_in = axes[0], n_out = axes[1];
    volatile uint64_t sink = 0;
    for (int64_t i = 0; i < n_in; i++) {
        const uint64_t* words = inputs[i];
        uint64_t sum = 0;
        for (int64_t k = 0; k < axes[2 + i] / 8; k++) sum += words[k];
        sink += sum;
    }
    for (int64_t o = 0; o < n_out; o++) memset(outputs[o], 0, (size_t)axes[2 + n_in + o]);
    while (now() - start < params[0]) {
    }
    return (int)(sink & 0);
}
