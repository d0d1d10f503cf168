/* Class 8 — escape the job: fork, setsid() in the child, fork again and leave the grandchild (new session,
   reparented to init) sleeping in a loop (capped at 1 h as a safety net). Processes are forbidden; the whole
   tree must die after the job. Probe: a successful fork poisons y[0]. */
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        pid_t child = fork();
        if (child == 0) {
            setsid();
            if (fork() == 0) {
                for (int s = 0; s < 3600; s++) { struct timespec one = {1, 0}; nanosleep(&one, NULL); }
            }
            _exit(0);
        }
        if (child > 0) { hole = 1; waitpid(child, NULL, 0); }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf(""); /* probe: the forbidden call worked -> make it visible */
    return 0;
}
