// Class 10 (held-out review, 2026-12-03, rewritten by us) — as cuda_tail_per_thread_stream, but the tail runs on a
// stream made by cuStreamCreate, fetched through cudaGetDriverEntryPointByVersion under a name assembled at run
// time, so that no check of the source or the imports sees it. The time must include the tail.
#include <cstdint>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long begin, long long end, float a) {
    for (long long i = begin + blockIdx.x * (long long)blockDim.x + threadIdx.x; i < end;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + z[i];
}

typedef CUresult (*make_stream_t)(CUstream*, unsigned int);

static cudaStream_t driver_stream() {
    static CUstream made;
    if (made) return reinterpret_cast<cudaStream_t>(made);
    char name[] = {'c', 'u', 'S', 't', 'r', 'e', 'a', 'm', 'C', 'r', 'e', 'a', 't', 'e', 0};
    void* make = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion(name, &make, 12000, cudaEnableDefault, &found) != cudaSuccess || !make)
        return nullptr;
    if (reinterpret_cast<make_stream_t>(make)(&made, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return nullptr;
    return reinterpret_cast<cudaStream_t>(made);
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    static cudaEvent_t head_done;
    if (!head_done && cudaEventCreateWithFlags(&head_done, cudaEventDisableTiming) != cudaSuccess) return 1;
    cudaStream_t tail = driver_stream();
    if (!tail) return 1;
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    const long long n = axes[0], cut = n - n / 5;
    const float a = static_cast<float>(params[0]);
    cudaStream_t harness = static_cast<cudaStream_t>(stream);
    axpy<<<1024, 256, 0, harness>>>(x, z, y, 0, cut, a);
    cudaEventRecord(head_done, harness);
    cudaStreamWaitEvent(tail, head_done, 0);
    axpy<<<1024, 256, 0, tail>>>(x, z, y, cut, n, a);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
