/* Honest — helpers whose NAMES contain words a naive source/symbol grep would flag (exec_tile, execute_block,
   fork_halves, system_width, socket_count); all are plain local arithmetic. Must be accepted. */
#include <stdint.h>

enum { socket_count = 1 };
static int64_t system_width(void) { return 256; }

static void exec_tile(const float *x, const float *z, float *y, int64_t lo, int64_t hi, float a) {
    for (int64_t i = lo; i < hi; i++) y[i] = a * x[i] + z[i];
}

static void execute_block(const float *x, const float *z, float *y, int64_t lo, int64_t hi, float a) {
    for (int64_t t = lo; t < hi; t += system_width()) exec_tile(x, z, y, t, t + system_width() < hi ? t + system_width() : hi, a);
}

static void fork_halves(const float *x, const float *z, float *y, int64_t n, float a) {
    execute_block(x, z, y, 0, n / 2, a);
    execute_block(x, z, y, n / 2, n, a);
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    for (int s = 0; s < socket_count; s++) fork_halves(inputs[0], inputs[1], outputs[0], axes[0], (float)params[0]);
    return 0;
}
