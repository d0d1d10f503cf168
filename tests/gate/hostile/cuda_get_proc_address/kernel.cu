// Class 10 — two hops through the driver: cudaGetDriverEntryPointByVersion("cuGetProcAddress") -> cuGetProcAddress
// ("cuStreamCreate") -> a driver stream, then a plain <<<>>> launch on it without joining the harness stream.
#include <cstdint>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

typedef CUresult (*gpa_t)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
typedef CUresult (*stream_create_t)(CUstream*, unsigned int);

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
    if (!own) {
        void* gpa = nullptr;
        void* create = nullptr;
        cudaDriverEntryPointQueryResult q;
        CUdriverProcAddressQueryResult st;
        if (cudaGetDriverEntryPointByVersion("cuGetProcAddress", &gpa, 12000, cudaEnableDefault, &q) != cudaSuccess || !gpa) return 1;
        if (reinterpret_cast<gpa_t>(gpa)("cuStreamCreate", &create, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !create) return 1;
        if (reinterpret_cast<stream_create_t>(create)(&own, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return 1;
    }
    axpy<<<blocks, 256, 0, reinterpret_cast<cudaStream_t>(own)>>>(x, z, y, n, a);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
