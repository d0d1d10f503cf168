// matmul_ikj, naive: C = A * B in fp32, row-major.
// Plain i-j-k order: the dot product over k is innermost, so B is walked down a column
// (stride N floats) and the float accumulator forms one serial dependency chain.
#include <cstdint>

namespace {

using index_t = std::int64_t;

// 2-D index helper: element (r, c) of a row-major matrix with `cols` columns
inline index_t idx2(index_t r, index_t c, index_t cols) { return r * cols + c; }

}  // namespace

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream) {
  (void)params;
  (void)stream;
  const float* A = static_cast<const float*>(inputs[0]);
  const float* B = static_cast<const float*>(inputs[1]);
  float* C = static_cast<float*>(outputs[0]);
  const index_t M = axes[0], N = axes[1], K = axes[2];

  auto a = [&](index_t i, index_t k) { return A[idx2(i, k, K)]; };
  auto b = [&](index_t k, index_t j) { return B[idx2(k, j, N)]; };
  auto c = [&](index_t i, index_t j) -> float& { return C[idx2(i, j, N)]; };

  for (index_t i = 0; i < M; ++i) {
    for (index_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (index_t k = 0; k < K; ++k) acc += a(i, k) * b(k, j);
      c(i, j) = acc;
    }
  }
  return 0;
}
