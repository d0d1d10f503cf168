// matmul_ikj, expert: C = A * B in fp32, row-major.
//
// Structure (the k loop of the naive moves out, and i-k-j order lives in the micro-tile):
//   pack B once        : B -> column panels of kNr floats, each [K][kNr], zero-padded past N
//   row blocks (OpenMP): threads take kMc-row blocks of C
//     depth blocks     : kKc-deep slices; pack the A block into kMr-row micro-panels [kc][kMr]
//       panels x tiles : kMr x kNr register tile per (panel, micro-panel): broadcast one A value,
//                        multiply-add it into kVecs 16-lane vectors of the packed B row
// Interactions: the micro-tile reads only packed, padded panels, so packing, the tile shape and the
// edge path are one design (remove packing and the micro-tile must learn strides and tails); the
// first depth block stores, later ones accumulate, so C needs no zeroing pass; the B panels are
// shared by all threads (packed inside the same parallel region, a barrier before use).
// Vectors are GCC vector extensions, not intrinsics: 16 lanes = one zmm with AVX-512, two ymm
// with AVX2; -march=native (the gate's base flags) picks the instructions and FMA contraction.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using index_t = std::int64_t;

typedef float lane16 __attribute__((vector_size(64), may_alias));
typedef float lane16_u __attribute__((vector_size(64), aligned(4), may_alias));  // any address

constexpr int kLanes = 16;
constexpr int kVecs = 2;               // vectors across one micro-tile row
constexpr int kNr = kLanes * kVecs;    // 32 columns per packed B panel
#if defined(__AVX512F__)
constexpr int kMr = 8;                 // 8 x 2 accumulators: 16 of the 32 zmm registers
#else
constexpr int kMr = 4;                 // 4 x 2 x (2 ymm halves): 16 ymm registers
#endif
constexpr index_t kKc = 128;           // depth block: a kKc x kNr B sliver is 16 KiB (L1)
constexpr index_t kMc = 64;            // rows per work item, a multiple of kMr (A block: 32 KiB, L2)
static_assert(kMc % kMr == 0, "row block must hold whole micro-panels");

// 64-byte aligned scratch that never throws: a null pointer means out of memory
struct Scratch {
  float* data;
  explicit Scratch(std::size_t count)
      : data(static_cast<float*>(::operator new[](count * sizeof(float), std::align_val_t{64},
                                                  std::nothrow))) {}
  ~Scratch() { ::operator delete[](data, std::align_val_t{64}); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// columns [j0, j0 + kNr) of B, all K rows, laid out [K][kNr]; columns past N are zero
void pack_b_panel(const float* __restrict B, index_t N, index_t K, index_t j0,
                  float* __restrict dst) {
  const index_t width = std::min<index_t>(kNr, N - j0);
  for (index_t k = 0; k < K; ++k) {
    const float* src = B + k * N + j0;
    float* out = dst + k * kNr;
    index_t j = 0;
    for (; j < width; ++j) out[j] = src[j];
    for (; j < kNr; ++j) out[j] = 0.0f;
  }
}

// rows [i0, i0 + mc) x depth [p0, p0 + kc) of A as micro-panels of kMr rows, each [kc][kMr];
// rows past mc are zero, so the micro-tile never needs a row tail
void pack_a_block(const float* __restrict A, index_t K, index_t i0, index_t mc, index_t p0,
                  index_t kc, float* __restrict dst) {
  for (index_t ir = 0; ir < mc; ir += kMr) {
    const int rows = static_cast<int>(std::min<index_t>(kMr, mc - ir));
    float* out = dst + ir * kc;
    const float* src = A + (i0 + ir) * K + p0;
    for (index_t k = 0; k < kc; ++k) {
      int r = 0;
      for (; r < rows; ++r) out[k * kMr + r] = src[r * K + k];
      for (; r < kMr; ++r) out[k * kMr + r] = 0.0f;
    }
  }
}

// kMr x kNr tile of C (leading dimension ldc) = [C +] Ap * Bp over kc steps
template <bool kAccumulate>
inline void micro_tile(index_t kc, const float* __restrict ap, const float* __restrict bp,
                       float* __restrict c, index_t ldc) {
  lane16 acc[kMr][kVecs];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[r][v] = lane16{};

  for (index_t k = 0; k < kc; ++k) {
    const lane16* brow = reinterpret_cast<const lane16*>(bp + k * kNr);
    lane16 b[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) b[v] = brow[v];
    const float* arow = ap + k * kMr;
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      const float a = arow[r];
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] += a * b[v];
    }
  }

#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) {
    lane16_u* out = reinterpret_cast<lane16_u*>(c + r * ldc);
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      if (kAccumulate)
        out[v] += acc[r][v];
      else
        out[v] = acc[r][v];
    }
  }
}

// a tile cut by the right or bottom edge: compute the full tile into scratch, keep the valid part
void edge_tile(index_t kc, const float* __restrict ap, const float* __restrict bp,
               float* __restrict c, index_t ldc, int rows, int cols, bool accumulate) {
  alignas(64) float tile[kMr * kNr];
  micro_tile<false>(kc, ap, bp, tile, kNr);
  for (int r = 0; r < rows; ++r) {
    float* dst = c + r * ldc;
    const float* src = tile + r * kNr;
    if (accumulate)
      for (int j = 0; j < cols; ++j) dst[j] += src[j];
    else
      for (int j = 0; j < cols; ++j) dst[j] = src[j];
  }
}

}  // namespace

extern "C" int kl_launch(const void* const* inputs, void* const* outputs,
                         const std::int64_t* axes, const double* params, void* stream) {
  (void)params;
  (void)stream;
  const float* __restrict A = static_cast<const float*>(inputs[0]);
  const float* __restrict B = static_cast<const float*>(inputs[1]);
  float* __restrict C = static_cast<float*>(outputs[0]);
  const index_t M = axes[0], N = axes[1], K = axes[2];
  if (M <= 0 || N <= 0 || K <= 0) return M > 0 && N > 0 ? 1 : 0;

  int teams = 1;
#ifdef _OPENMP
  teams = omp_get_max_threads();
#endif
  const index_t panels = (N + kNr - 1) / kNr;
  Scratch bpack(static_cast<std::size_t>(panels * K * kNr));
  Scratch apack(static_cast<std::size_t>(teams) * kMc * kKc);
  if (!bpack.data || !apack.data) return 1;

#pragma omp parallel
  {
    int me = 0;
#ifdef _OPENMP
    me = omp_get_thread_num();
#endif
    float* ap = apack.data + static_cast<std::size_t>(me) * kMc * kKc;

#pragma omp for schedule(static)
    for (index_t p = 0; p < panels; ++p)
      pack_b_panel(B, N, K, p * kNr, bpack.data + p * K * kNr);
    // implicit barrier: every panel is packed before any tile reads it

#pragma omp for schedule(static)
    for (index_t i0 = 0; i0 < M; i0 += kMc) {
      const index_t mc = std::min<index_t>(kMc, M - i0);
      for (index_t p0 = 0; p0 < K; p0 += kKc) {
        const index_t kc = std::min<index_t>(kKc, K - p0);
        const bool first = p0 == 0;
        pack_a_block(A, K, i0, mc, p0, kc, ap);
        for (index_t p = 0; p < panels; ++p) {
          const float* bp = bpack.data + p * K * kNr + p0 * kNr;
          const index_t j0 = p * kNr;
          const int cols = static_cast<int>(std::min<index_t>(kNr, N - j0));
          for (index_t ir = 0; ir < mc; ir += kMr) {
            const int rows = static_cast<int>(std::min<index_t>(kMr, mc - ir));
            float* c = C + (i0 + ir) * N + j0;
            const float* a = ap + ir * kc;
            if (rows == kMr && cols == kNr) {
              if (first)
                micro_tile<false>(kc, a, bp, c, N);
              else
                micro_tile<true>(kc, a, bp, c, N);
            } else {
              edge_tile(kc, a, bp, c, N, rows, cols, !first);
            }
          }
        }
      }
    }
  }
  return 0;
}
