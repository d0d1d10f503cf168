// Class 10 (ours) — makes a CUDA context of its own through the driver (cuCtxCreate, fetched under a name assembled
// at run time), where work is neither waited for by the call's device synchronisation nor bounded by it; it then
// computes honestly on the harness stream. Making the context is what must be refused.
#include <cstdint>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + z[i];
}

typedef CUresult (*make_context_t)(CUcontext*, unsigned int, CUdevice);
typedef CUresult (*pop_context_t)(CUcontext*);

static int own_context() {
    static CUcontext made;
    if (made) return 0;
    char create[] = {'c', 'u', 'C', 't', 'x', 'C', 'r', 'e', 'a', 't', 'e', 0};
    char pop[] = {'c', 'u', 'C', 't', 'x', 'P', 'o', 'p', 'C', 'u', 'r', 'r', 'e', 'n', 't', 0};
    void* make = nullptr;
    void* leave = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion(create, &make, 12000, cudaEnableDefault, &found) != cudaSuccess || !make)
        return 1;
    if (cudaGetDriverEntryPointByVersion(pop, &leave, 12000, cudaEnableDefault, &found) != cudaSuccess || !leave)
        return 1;
    if (reinterpret_cast<make_context_t>(make)(&made, 0, 0) != CUDA_SUCCESS) return 1;
    CUcontext current;
    return reinterpret_cast<pop_context_t>(leave)(&current) == CUDA_SUCCESS ? 0 : 1;
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    if (own_context()) return 1;
    axpy<<<1024, 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0]),
                                                                static_cast<const float*>(inputs[1]),
                                                                static_cast<float*>(outputs[0]), axes[0],
                                                                static_cast<float>(params[0]));
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
