// transpose, style cpp: C++ with two small row-major view structs, std::int64_t and static_cast.
// y[j,i] = x[i,j]; x is M x N, y is N x M, fp32.
#include <cstdint>

namespace {

template <typename T>
struct View {
    T* data;
    std::int64_t cols;
    T& operator()(std::int64_t r, std::int64_t c) const { return data[r * cols + c]; }
};

}  // namespace

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream)
{
    const std::int64_t m = axes[0];
    const std::int64_t n = axes[1];
    const View<const float> x{static_cast<const float*>(inputs[0]), n};
    const View<float> y{static_cast<float*>(outputs[0]), m};
    static_cast<void>(params);
    static_cast<void>(stream);

    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            y(j, i) = x(i, j);
        }
    }
    return 0;
}
