// colsum_cpp, naive: s[j] = sum_i x[i, j] over a row-major fp32 matrix.
// A small read-only matrix view; the column loop is outermost, so the inner loop walks down
// one column with a stride of N floats, one serial float accumulator per column.
#include <cstdint>

namespace {

struct ConstMatrix {
  const float* data;
  std::int64_t rows, cols;
  float operator()(std::int64_t i, std::int64_t j) const { return data[i * cols + j]; }
};

}  // namespace

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream) {
  (void)params;
  (void)stream;
  const ConstMatrix x{static_cast<const float*>(inputs[0]), axes[0], axes[1]};
  float* s = static_cast<float*>(outputs[0]);

  for (std::int64_t j = 0; j < x.cols; ++j) {
    float acc = 0.0f;
    for (std::int64_t i = 0; i < x.rows; ++i) acc += x(i, j);
    s[j] = acc;
  }
  return 0;
}
