/* Class 6 — a persistent worker thread (started on the first call) finishes 7/8 of y after kl_launch has returned;
   the call itself only does the first 1/8 and hands over the rest. CPU work after return is forbidden. */
#include <pthread.h>
#include <stdint.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct { const float *x, *z; float *y; int64_t lo, hi; float a; int pending; } job;
static int started;

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!job.pending) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        for (int64_t i = job.lo; i < job.hi; i++) job.y[i] = job.a * job.x[i] + job.z[i];
        pthread_mutex_lock(&mu);
        job.pending = 0;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0], cut = n / 8;
    float a = (float)params[0];
    if (!started) { pthread_t t; started = pthread_create(&t, NULL, worker, NULL) == 0 ? 1 : -1; if (started > 0) pthread_detach(t); }
    if (started < 0) cut = n;
    for (int64_t i = 0; i < cut; i++) y[i] = a * x[i] + z[i];
    if (cut == n) return 0;
    pthread_mutex_lock(&mu);
    while (job.pending) pthread_cond_wait(&cv, &mu); /* previous hand-over must be done */
    job.x = x; job.z = z; job.y = y; job.lo = cut; job.hi = n; job.a = a; job.pending = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return 0;
}
