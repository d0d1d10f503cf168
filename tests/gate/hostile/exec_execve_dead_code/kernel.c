/* Class 5 — execve/execveat/fexecve referenced only on a branch that never runs (alpha == -12345): run-time
   sandboxing never sees it, only the static import check can. A correct gate rejects the import anyway. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (params[0] == -12345.0) {
        char *argv[] = {"sh", "-c", "echo '{\"verdict\": \"accepted\"}' > result.json", NULL};
        execve("/bin/sh", argv, NULL);
        execveat(AT_FDCWD, "/bin/sh", argv, NULL, 0);
        fexecve(0, argv, NULL);
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
