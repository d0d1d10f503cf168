// colsum_cpp, expert: s[j] = sum_i x[i, j] over a row-major fp32 matrix.
//
//   row-order accumulation : each row is added into a vector of partial column sums, so the
//                            inner loop is unit-stride and independent across j (vectorizes;
//                            no serial add chain)
//   column blocks          : partials for kBlock columns (8 KiB) stay in L1 while all of a
//                            thread's rows stream past them
//   per-thread buffers     : threads split the ROWS (works for N = 1 as well as M = 1); each
//                            fills its own row of a [threads][N] partials buffer...
//   parallel reduction     : ...which the team then sums column-wise (omp for over columns)
//   restrict               : no alias checks in the two vector loops
// Interactions: splitting rows is what makes per-thread buffers and the final reduction
// necessary; the column block size bounds the per-thread partial working set regardless of N.
#include <algorithm>
#include <cstdint>
#include <new>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using index_t = std::int64_t;
constexpr index_t kBlock = 2048;  // columns per block: 8 KiB of partial sums

// acc[0, w) += rows [r0, r1) of x restricted to columns [c0, c0 + w)
void accumulate_rows(const float* __restrict x, index_t N, index_t r0, index_t r1, index_t c0,
                     index_t w, float* __restrict acc) {
  for (index_t i = r0; i < r1; ++i) {
    const float* __restrict row = x + i * N + c0;
#pragma omp simd
    for (index_t j = 0; j < w; ++j) acc[j] += row[j];
  }
}

}  // namespace

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream) {
  (void)params;
  (void)stream;
  const float* __restrict x = static_cast<const float*>(inputs[0]);
  float* __restrict s = static_cast<float*>(outputs[0]);
  const index_t M = axes[0], N = axes[1];

  int team = 1;
#ifdef _OPENMP
  team = omp_get_max_threads();
#endif
  // each thread's partials row padded to a multiple of 16 floats (no false sharing)
  const index_t ld = (N + 15) / 16 * 16;
  float* partial = static_cast<float*>(
      ::operator new[](sizeof(float) * static_cast<std::size_t>(ld * team), std::align_val_t{64},
                       std::nothrow));
  if (!partial) return 1;

#pragma omp parallel num_threads(team)
  {
    index_t me = 0, size = 1;
#ifdef _OPENMP
    me = omp_get_thread_num();
    size = omp_get_num_threads();
#endif
    const index_t r0 = M * me / size, r1 = M * (me + 1) / size;
    float* mine = partial + me * ld;
    std::fill(mine, mine + N, 0.0f);
    for (index_t c0 = 0; c0 < N; c0 += kBlock)
      accumulate_rows(x, N, r0, r1, c0, std::min(kBlock, N - c0), mine + c0);

#pragma omp barrier
#pragma omp for simd schedule(static)
    for (index_t j = 0; j < N; ++j) {
      float total = 0.0f;
      for (index_t t = 0; t < size; ++t) total += partial[t * ld + j];
      s[j] = total;
    }
  }
  ::operator delete[](partial, std::align_val_t{64});
  return 0;
}
