/* Class 6 — outputs are correct, but the first call leaves a detached thread burning CPU after every return
   (bounded to ~10 minutes as a safety net). CPU work after a call returns is forbidden. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

static volatile uint64_t sink;

static void *spin(void *unused) {
    (void)unused;
    struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);
    do { for (int i = 0; i < 1000000; i++) sink += (uint64_t)i * 2654435761u; clock_gettime(CLOCK_MONOTONIC, &t); }
    while (t.tv_sec - t0.tv_sec < 600);
    return NULL;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static int started;
    if (!started) { started = 1; pthread_t t; if (pthread_create(&t, NULL, spin, NULL) == 0) pthread_detach(t); }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
