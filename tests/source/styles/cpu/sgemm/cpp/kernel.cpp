// sgemm, style cpp: C++ with a row-major view struct, std::int64_t, static_cast, i-j-k order.
// C[M,N] = A[M,K] @ B[K,N], row-major fp32 (C overwritten).
#include <cstdint>

namespace {

template <typename T>
struct RowMajor {
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
    const std::int64_t k = axes[2];
    const RowMajor<const float> a{static_cast<const float*>(inputs[0]), k};
    const RowMajor<const float> b{static_cast<const float*>(inputs[1]), n};
    const RowMajor<float> c{static_cast<float*>(outputs[0]), n};
    static_cast<void>(params);
    static_cast<void>(stream);

    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (std::int64_t p = 0; p < k; ++p) {
                sum += a(i, p) * b(p, j);
            }
            c(i, j) = sum;
        }
    }
    return 0;
}
