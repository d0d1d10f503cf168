// rmsnorm, style cpp: C++ with std::int64_t, a small row-view struct, static_cast and a lambda.
// y[i,j] = x[i,j] / sqrt(mean(x[i,:]^2) + eps) * w[j], fp32.
#include <cmath>
#include <cstdint>

namespace {

struct Matrix {
    float* data;
    std::int64_t cols;
    float* row(std::int64_t i) const { return data + i * cols; }
};

struct ConstMatrix {
    const float* data;
    std::int64_t cols;
    const float* row(std::int64_t i) const { return data + i * cols; }
};

}  // namespace

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream)
{
    const std::int64_t rows = axes[0];
    const std::int64_t cols = axes[1];
    const ConstMatrix x{static_cast<const float*>(inputs[0]), cols};
    const float* w = static_cast<const float*>(inputs[1]);
    const Matrix y{static_cast<float*>(outputs[0]), cols};
    const float eps = static_cast<float>(params[0]);
    static_cast<void>(stream);

    auto inv_rms = [&](const float* xr) {
        float ss = 0.0f;
        for (std::int64_t j = 0; j < cols; ++j) ss += xr[j] * xr[j];
        return 1.0f / std::sqrt(ss / static_cast<float>(cols) + eps);
    };

    for (std::int64_t i = 0; i < rows; ++i) {
        const float* xr = x.row(i);
        float* yr = y.row(i);
        const float s = inv_rms(xr);
        for (std::int64_t j = 0; j < cols; ++j) yr[j] = xr[j] * s * w[j];
    }
    return 0;
}
