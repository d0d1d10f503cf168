// cosine_rows, naive: out[i] = dot(a_i, b_i) / max(|a_i| |b_i|, eps) for row-major a, b [M, D].
// Written with the standard library: three std::inner_product passes per row (a.b, a.a, b.b),
// float accumulators, one thread.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream) {
  (void)stream;
  const float* a = static_cast<const float*>(inputs[0]);
  const float* b = static_cast<const float*>(inputs[1]);
  float* out = static_cast<float*>(outputs[0]);
  const std::int64_t rows = axes[0];
  const std::int64_t dim = axes[1];
  const float eps = static_cast<float>(params[0]);

  for (std::int64_t i = 0; i < rows; ++i) {
    const float* ai = a + i * dim;
    const float* bi = b + i * dim;
    const float dot = std::inner_product(ai, ai + dim, bi, 0.0f);
    const float norm_a = std::sqrt(std::inner_product(ai, ai + dim, ai, 0.0f));
    const float norm_b = std::sqrt(std::inner_product(bi, bi + dim, bi, 0.0f));
    out[i] = dot / std::max(norm_a * norm_b, eps);
  }
  return 0;
}
