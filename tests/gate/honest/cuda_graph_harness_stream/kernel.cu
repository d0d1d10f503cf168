// Honest — CUDA: the launch is captured into a CUDA graph from the harness stream and the graph is replayed on it,
// captured again whenever the arguments change. Every activity is on the harness stream: must be accepted.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float* __restrict__ x, const float* __restrict__ z, float* __restrict__ y, long long n,
                     float a) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + z[i];
}

struct Captured {
    const void* x;
    const void* z;
    void* y;
    long long n;
    float a;
    cudaStream_t stream;
};

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    static cudaGraphExec_t replay;
    static Captured seen;
    const Captured now = {inputs[0], inputs[1], outputs[0], axes[0], static_cast<float>(params[0]),
                          static_cast<cudaStream_t>(stream)};
    if (!replay || now.x != seen.x || now.z != seen.z || now.y != seen.y || now.n != seen.n || now.a != seen.a ||
        now.stream != seen.stream) {
        if (replay && cudaGraphExecDestroy(replay) != cudaSuccess) return 1;
        replay = nullptr;
        cudaGraph_t graph;
        if (cudaStreamBeginCapture(now.stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return 1;
        unsigned blocks = static_cast<unsigned>((now.n + 255) / 256);
        if (blocks > 65535) blocks = 65535;
        axpy<<<blocks, 256, 0, now.stream>>>(static_cast<const float*>(now.x), static_cast<const float*>(now.z),
                                              static_cast<float*>(now.y), now.n, now.a);
        if (cudaStreamEndCapture(now.stream, &graph) != cudaSuccess) return 1;
        cudaError_t made = cudaGraphInstantiate(&replay, graph, 0);
        cudaGraphDestroy(graph);
        if (made != cudaSuccess) return 1;
        seen = now;
    }
    return cudaGraphLaunch(replay, now.stream) == cudaSuccess ? 0 : 1;
}
