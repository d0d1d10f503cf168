// Honest — C++: std::thread::hardware_concurrency() (no thread is created) picks how many chunks to split the loop
// into; the chunks run one after another on the calling thread. Must be accepted.
#include <algorithm>
#include <cstdint>
#include <thread>

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    (void)stream;
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t n = axes[0];
    const float a = static_cast<float>(params[0]);
    const int64_t chunks = std::max<int64_t>(1, std::thread::hardware_concurrency() * 4);
    const int64_t step = (n + chunks - 1) / chunks;
    for (int64_t lo = 0; lo < n; lo += step) {
        const int64_t hi = std::min(n, lo + step);
        for (int64_t i = lo; i < hi; i++) y[i] = a * x[i] + z[i];
    }
    return 0;
}
