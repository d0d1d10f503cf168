#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Writes nothing: the poisoned outputs stay NaN. */
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* p, void* s) {
    return 0;
}
