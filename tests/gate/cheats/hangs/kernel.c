#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Never returns. */
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* p, void* s) {
    volatile int spin = 1;
    while (spin) {}
    return 0;
}
