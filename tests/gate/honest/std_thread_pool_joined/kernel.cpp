// Honest — C++: two std::threads per call (kernel.toml declares threads = 2), each taking half the range, both
// joined before kl_launch returns, so no work outlives the call. Must be accepted.
#include <cstdint>
#include <thread>
#include <vector>

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    (void)stream;
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    const int64_t n = axes[0];
    const float a = static_cast<float>(params[0]);
    const int workers = 2;
    std::vector<std::thread> pool;
    pool.reserve(workers);
    for (int w = 0; w < workers; w++) {
        const int64_t lo = n * w / workers, hi = n * (w + 1) / workers;
        pool.emplace_back([=] { for (int64_t i = lo; i < hi; i++) y[i] = a * x[i] + z[i]; });
    }
    for (auto& t : pool) t.join();
    return 0;
}
