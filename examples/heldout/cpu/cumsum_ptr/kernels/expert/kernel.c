/* cumsum_ptr, expert: row-wise inclusive prefix sum, fp32.
 *
 *   in-register scan : a 16-lane vector is scanned with log2(16) = 4 shift-and-add steps
 *                      (GCC vector extension + __builtin_shuffle against a zero vector; with
 *                      AVX-512 each shift is one permute of a zmm register)
 *   two-vector steps : two vectors are scanned independently, then offset by the running
 *                      carry; the carry chain is one add per 32 elements instead of 32
 *   scalar tail      : the last N % 32 elements continue from the carry
 *   OpenMP over rows : rows are independent (static schedule)
 *   restrict         : loads and stores need no alias checks
 * Interactions: the carry is what links the independent vector scans, so the vector step and
 * the tail must agree on it; rows are split across threads, not columns, because a column
 * split would need a second pass to propagate carries. */
#include <stdint.h>

typedef float vf16 __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t vi16 __attribute__((vector_size(64)));

/* lane i of v moves to lane i + k; lanes below k become 0 (index 0 of the zero vector) */
#define SHIFT_UP(v, k)                                                                      \
    __builtin_shuffle(zero, (v), (vi16){                                                    \
        0 >= k ? 16 + 0 - k : 0, 1 >= k ? 16 + 1 - k : 0, 2 >= k ? 16 + 2 - k : 0,          \
        3 >= k ? 16 + 3 - k : 0, 4 >= k ? 16 + 4 - k : 0, 5 >= k ? 16 + 5 - k : 0,          \
        6 >= k ? 16 + 6 - k : 0, 7 >= k ? 16 + 7 - k : 0, 8 >= k ? 16 + 8 - k : 0,          \
        9 >= k ? 16 + 9 - k : 0, 10 >= k ? 16 + 10 - k : 0, 11 >= k ? 16 + 11 - k : 0,      \
        12 >= k ? 16 + 12 - k : 0, 13 >= k ? 16 + 13 - k : 0, 14 >= k ? 16 + 14 - k : 0,    \
        15 >= k ? 16 + 15 - k : 0})

static inline vf16 scan16(vf16 v)
{
    const vf16 zero = {0};
    v += SHIFT_UP(v, 1);
    v += SHIFT_UP(v, 2);
    v += SHIFT_UP(v, 4);
    v += SHIFT_UP(v, 8);
    return v;
}

static void scan_row(const float* restrict src, float* restrict dst, int64_t N)
{
    float carry = 0.0f;
    int64_t j = 0;
    for (; j + 32 <= N; j += 32) {
        const vf16 a = scan16(*(const vf16*)(src + j));
        const vf16 b = scan16(*(const vf16*)(src + j + 16));
        const float ta = a[15], tb = b[15];
        *(vf16*)(dst + j) = a + carry;
        *(vf16*)(dst + j + 16) = b + (carry + ta);
        carry += ta + tb;
    }
    for (; j < N; j++) {
        carry += src[j];
        dst[j] = carry;
    }
}

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* restrict x = (const float*)inputs[0];
    float* restrict y = (float*)outputs[0];
    const int64_t M = axes[0], N = axes[1];
    (void)params; (void)stream;

#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < M; r++) scan_row(x + r * N, y + r * N, N);
    return 0;
}
