// Class 10 — go around the runtime: cudaGetDriverEntryPoint("cuStreamCreate") makes a driver stream and
// cudaGetDriverEntryPoint("cuLaunchKernel") launches the kernel (CUfunction from cudaGetFuncBySymbol) on it,
// without joining the harness stream. Must be caught.
#include <cstdint>
#include <cuda.h>
#include <cuda_runtime.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cudaGetDriverEntryPoint is deprecated in CUDA 13

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

typedef CUresult (*stream_create_t)(CUstream*, unsigned int);
typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    (void)stream;
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    long long n = axes[0];
    float a = static_cast<float>(params[0]);
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    static CUstream own;
    static launch_t launch;
    static cudaFunction_t fn;
    if (!launch) {
        void *create = nullptr, *lk = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPoint("cuStreamCreate", &create, cudaEnableDefault, &q) != cudaSuccess || !create) return 1;
        if (cudaGetDriverEntryPoint("cuLaunchKernel", &lk, cudaEnableDefault, &q) != cudaSuccess || !lk) return 1;
        if (reinterpret_cast<stream_create_t>(create)(&own, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return 1;
        if (cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(axpy)) != cudaSuccess) return 1;
        launch = reinterpret_cast<launch_t>(lk);
    }
    void* args[] = {&x, &z, &y, &n, &a};
    return launch(reinterpret_cast<CUfunction>(fn), blocks, 1, 1, 256, 1, 1, 0, own, args, nullptr) == CUDA_SUCCESS ? 0 : 1;
}
