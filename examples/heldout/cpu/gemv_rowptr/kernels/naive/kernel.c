/* gemv_rowptr, naive: y = A x for a row-major fp32 matrix A[m][n].
 * One thread. A row pointer steps through A, and each dot product walks the row and x with a
 * pair of pointers into one float accumulator. */
#include <stdint.h>

int kl_launch(const void* const* inputs, void* const* outputs,
              const int64_t* axes, const double* params, void* stream)
{
    const float* A = (const float*)inputs[0];
    const float* x = (const float*)inputs[1];
    float* y = (float*)outputs[0];
    const int64_t m = axes[0];
    const int64_t n = axes[1];
    (void)params;
    (void)stream;

    const float* row = A;
    for (int64_t i = 0; i < m; i++) {
        const float* a = row;
        const float* xp = x;
        const float* end = row + n;
        float sum = 0.0f;
        while (a != end)
            sum += *a++ * *xp++;
        y[i] = sum;
        row += n;
    }
    return 0;
}
