// stencil2d, style cpp: C++ with a small grid-view struct (zero outside the grid), std::int64_t
// and static_cast; y[i,j] = sum_{a,b} w[a,b] * x[i+a-1, j+b-1], fp32.
#include <cstdint>

namespace {

struct Grid {
    const float* data;
    std::int64_t rows;
    std::int64_t cols;
    float at(std::int64_t r, std::int64_t c) const {
        if (r < 0 || r >= rows || c < 0 || c >= cols) return 0.0f;
        return data[r * cols + c];
    }
};

}  // namespace

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream)
{
    const std::int64_t h = axes[0];
    const std::int64_t w_ = axes[1];
    const Grid x{static_cast<const float*>(inputs[0]), h, w_};
    const float* w = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    static_cast<void>(params);
    static_cast<void>(stream);

    auto tap = [w](std::int64_t a, std::int64_t b) { return w[a * 3 + b]; };

    for (std::int64_t i = 0; i < h; ++i) {
        for (std::int64_t j = 0; j < w_; ++j) {
            float sum = 0.0f;
            for (std::int64_t a = 0; a < 3; ++a) {
                for (std::int64_t b = 0; b < 3; ++b) {
                    sum += tap(a, b) * x.at(i + a - 1, j + b - 1);
                }
            }
            y[i * w_ + j] = sum;
        }
    }
    return 0;
}
