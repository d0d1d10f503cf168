#include <cstdint>
// Launches nothing, writes nothing.
extern "C" int kl_launch(const void* const* in, void* const* out, const int64_t* axes,
                         const double* params, void* stream) {
    return 0;
}
