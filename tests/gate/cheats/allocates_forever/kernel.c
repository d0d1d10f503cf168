#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Allocates and touches memory until the allocator says no, then uses the null pointer. */
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* p, void* s) {
    for (;;) {
        char* block = malloc(64 << 20);
        memset(block, 1, 64 << 20);
    }
    return 0;
}
