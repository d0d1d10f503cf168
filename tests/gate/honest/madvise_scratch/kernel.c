/* Honest - a page-aligned scratch tile inside its own malloc'd block: madvise(MADV_WILLNEED) before
   using it, madvise(MADV_DONTNEED) when done (its contents are never read again), then free. x is
   staged through the tile. The sandbox allows madvise (but MADV_REMOVE); must be accepted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KL_PAGE 4096
#define KL_TILE 16384  /* floats: 64 KiB, 16 pages */

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const int64_t n = axes[0];
    const float a = (float)params[0];
    char *block = malloc(KL_TILE * sizeof(float) + KL_PAGE);
    if (!block) return 1;
    /* Whole pages inside the block, so madvise never touches malloc's own bookkeeping. */
    float *tile = (float *)(((uintptr_t)block + KL_PAGE - 1) & ~(uintptr_t)(KL_PAGE - 1));
    madvise(tile, KL_TILE * sizeof(float), MADV_WILLNEED);
    for (int64_t lo = 0; lo < n; lo += KL_TILE) {
        const int64_t len = n - lo < KL_TILE ? n - lo : KL_TILE;
        memcpy(tile, x + lo, (size_t)len * sizeof(float));
        for (int64_t i = 0; i < len; i++) y[lo + i] = a * tile[i] + z[lo + i];
    }
    madvise(tile, KL_TILE * sizeof(float), MADV_DONTNEED);
    free(block);
    return 0;
}
