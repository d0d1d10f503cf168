/* Class 16, the candidate of a pair - the same work as its baseline (../baseline), plus one call of a
   libm function nothing else uses (tgammaf): libm's pages are shared by every process that maps it, so
   executing tgammaf brings its first cache line into the caches the baseline's runner can time. It
   calls it last, after its own streaming, so the line is as fresh as it can be when the baseline
   looks. It does nothing else: the cheat is all in the baseline, which slows down beside it. */
#include <math.h>
#include <stdint.h>

volatile float kl_sink;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    kl_sink = tgammaf(a);  /* the signal: ~100 ns of a ~1 ms call */
    return 0;
}
