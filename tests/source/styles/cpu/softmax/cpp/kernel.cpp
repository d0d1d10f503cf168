// softmax, style cpp: C++ with std::int64_t, an indexing lambda and static_cast.
// y[i,:] = exp(x[i,:] - max) / sum(exp(x[i,:] - max)), fp32.
#include <cmath>
#include <cstdint>

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream)
{
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    const std::int64_t m = axes[0];
    const std::int64_t n = axes[1];
    static_cast<void>(params);
    static_cast<void>(stream);

    auto at = [n](std::int64_t i, std::int64_t j) { return i * n + j; };

    for (std::int64_t i = 0; i < m; ++i) {
        float mx = x[at(i, 0)];
        for (std::int64_t j = 1; j < n; ++j) {
            if (x[at(i, j)] > mx) mx = x[at(i, j)];
        }
        float sum = 0.0f;
        for (std::int64_t j = 0; j < n; ++j) {
            const float e = std::exp(x[at(i, j)] - mx);
            y[at(i, j)] = e;
            sum += e;
        }
        for (std::int64_t j = 0; j < n; ++j) {
            y[at(i, j)] = y[at(i, j)] / sum;
        }
    }
    return 0;
}
