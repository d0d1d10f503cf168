/* Class 6 — kernel.toml declares threads = 1 but each call runs 8 pthreads (all joined before returning), trying to
   be timed as single-threaded while using every core. Affinity (1 CPU) + the CPU-time/wall check should neutralise it. */
#include <pthread.h>
#include <stdint.h>

#define T 8
struct job { const float *x, *z; float *y; int64_t lo, hi; float a; };

static void *run(void *p) {
    struct job *j = p;
    for (int64_t i = j->lo; i < j->hi; i++) j->y[i] = j->a * j->x[i] + j->z[i];
    return NULL;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    int64_t n = axes[0];
    struct job jobs[T]; pthread_t tid[T]; int started[T];
    for (int t = 0; t < T; t++) {
        jobs[t] = (struct job){inputs[0], inputs[1], outputs[0], n * t / T, n * (t + 1) / T, (float)params[0]};
        started[t] = pthread_create(&tid[t], NULL, run, &jobs[t]) == 0;
        if (!started[t]) run(&jobs[t]);
    }
    for (int t = 0; t < T; t++) if (started[t]) pthread_join(tid[t], NULL);
    return 0;
}
