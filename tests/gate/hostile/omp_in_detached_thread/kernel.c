/* Class 6 — OpenMP after return: kl_launch starts a detached pthread that runs an `omp parallel for` over y and
   returns at once, so a whole OpenMP team works after the call. CPU work after return is forbidden. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

struct job { const float *x, *z; float *y; int64_t n; float a; };

static void *run(void *p) {
    struct job *j = p;
    const float *x = j->x, *z = j->z; float *y = j->y; float a = j->a;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < j->n; i++) y[i] = a * x[i] + z[i];
    free(j);
    return NULL;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    struct job *j = malloc(sizeof *j);
    if (!j) return 1;
    *j = (struct job){inputs[0], inputs[1], outputs[0], axes[0], (float)params[0]};
    pthread_t t;
    if (pthread_create(&t, NULL, run, j) != 0) { run(j); return 0; }
    pthread_detach(t);
    return 0;
}
