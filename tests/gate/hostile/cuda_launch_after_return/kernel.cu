// Class 10 — return at once and let a detached host std::thread launch the kernel ~2 ms later (on the harness
// stream, after its end event was recorded): the timed interval holds nothing. Late launches must be caught.
#include <chrono>
#include <cstdint>
#include <cuda_runtime.h>
#include <thread>

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    long long n = axes[0];
    float a = static_cast<float>(params[0]);
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    std::thread([=] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        axpy<<<blocks, 256, 0, s>>>(x, z, y, n, a);
    }).detach();
    return 0;
}
