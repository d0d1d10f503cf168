// Class 10 — capture the kernel into a CUDA graph on a private stream and cudaGraphLaunch it on that private
// stream (not the harness stream), returning without joining. A graph launch off the harness stream must be caught.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    (void)stream;
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    long long n = axes[0];
    float a = static_cast<float>(params[0]);
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    static cudaStream_t own;
    if (!own && cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess) return 1;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    if (cudaStreamBeginCapture(own, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return 1;
    axpy<<<blocks, 256, 0, own>>>(x, z, y, n, a);
    if (cudaStreamEndCapture(own, &graph) != cudaSuccess) return 1;
    if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) return 1;
    cudaGraphLaunch(exec, own);
    cudaGraphDestroy(graph);  // the exec graph is kept (leaked) so the pending launch stays valid
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
