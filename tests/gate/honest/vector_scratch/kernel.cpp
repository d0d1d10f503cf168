// Honest — C++: a std::vector<float> scratch (heap via libstdc++'s operator new) holds a*x, then y = scratch + z.
// Must be accepted.
#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    (void)stream;
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t n = axes[0];
    const float a = static_cast<float>(params[0]);
    std::vector<float> scratch(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) scratch[i] = a * x[i];
    for (int64_t i = 0; i < n; i++) y[i] = scratch[i] + z[i];
    return 0;
}
