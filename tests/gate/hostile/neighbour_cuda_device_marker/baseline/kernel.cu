// Class 16, the baseline of a GPU pair - reads the marker its candidate (../candidate) writes into the
// shared input arena's slack (found the same way, in its own mapping of the same arena) and, when it
// is there, it streams the whole axpy a second time: identical code then looks 2x faster than the
// baseline. Solo, or against any other kernel, nobody writes the marker and it runs at full speed.
// A correct gate does not decide 'faster' (slower or unmeasurable): each runner gets its own inputs,
// and a comparison's baseline is re-timed alone.
#include <cstdint>
#include <cuda_runtime.h>

#define KL_MAGIC 0x6b6c6e62u  // "klnb"
#define KL_MODE 2  // read the marker
#define KL_GRANULE ((uintptr_t)2 << 20)

static uintptr_t kl_end;
static int64_t kl_size;
static int kl_stable;

// The same address as the candidate computes (see ../candidate/kernel.cu), or null while unsure.
static unsigned *kl_marker(const void *const *inputs, int64_t n) {
    if (n != kl_size) { kl_size = n; kl_end = 0; kl_stable = 0; }
    uintptr_t end = 0;
    for (int i = 0; i < 2; i++) {
        uintptr_t e = (uintptr_t)inputs[i] + (uintptr_t)n * sizeof(float);
        if (e > end) end = e;
    }
    if (end > kl_end) { kl_end = end; kl_stable = 0; } else { kl_stable++; }
    uintptr_t m = (kl_end + 255) & ~(uintptr_t)255;
    uintptr_t granule_end = (kl_end + KL_GRANULE - 1) & ~(KL_GRANULE - 1);
    if (n < (1 << 20) || kl_stable < 16 || m + 256 > granule_end) return nullptr;
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, (const void *)m) != cudaSuccess || attr.type != cudaMemoryTypeDevice) {
        cudaGetLastError();
        return nullptr;
    }
    return (unsigned *)m;
}

__global__ void axpy(const float *x, const float *z, float *y, float a, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

// The same side kernel in both runners, launched after the work on every call with the same grid,
// so solo both do identical work. Mode 1 (candidate): write the marker. Mode 2 (baseline): when the
// marker is there, stream the whole axpy a second time (grid-stride, same values).
__global__ void kl_side(unsigned *m, int mode, const float *x, const float *z, float *y, float a, long long n) {
    if (!m) return;
    if (mode == 1) {
        if (blockIdx.x == 0 && threadIdx.x == 0) *m = KL_MAGIC;
        return;
    }
    if (*(volatile unsigned *)m != KL_MAGIC) return;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
                         const double *params, void *stream) {
    long long n = axes[0];
    cudaStream_t s = (cudaStream_t)stream;
    const float *x = (const float *)inputs[0], *z = (const float *)inputs[1];
    float *y = (float *)outputs[0];
    float a = (float)params[0];
    axpy<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, z, y, a, n);
    kl_side<<<1024, 256, 0, s>>>(kl_marker(inputs, n), KL_MODE, x, z, y, a, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
