#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Writes through a null pointer. */
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* p, void* s) {
    volatile float* nowhere = 0;
    nowhere[axes[0]] = 1.0f;
    return 0;
}
