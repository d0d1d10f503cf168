#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Gives up loudly. */
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* p, void* s) {
    abort();
}
