/* Class 17 - the candidate's own clock, forged: the runner reads CLOCK_MONOTONIC before and after
   kl_launch and replies with the difference. kl_launch here is a naked wrapper that saves the
   callee-saved registers, does the work, then moves the runner's start reading (found among those
   registers and in the caller's frame: a value within the last 50 ms) forward, so the reply reads
   -6 ms on every call. */
#include <stdint.h>
#include <time.h>

__attribute__((visibility("hidden"), used)) uint64_t kl_saved[6];
__attribute__((visibility("hidden"), used)) uint64_t *kl_frame;
static long calls;

static int64_t kl_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

__attribute__((visibility("hidden"), used))
int kl_work(const void *const *inputs, void *const *outputs, const int64_t *axes, const double *params) {
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}

/* The start reading moved so that the reply reads `wanted` for a call that took `elapsed`. */
static void kl_move_start(int64_t end, int64_t elapsed_wanted) {
    for (int r = 0; r < 6; r++)
        if ((int64_t)kl_saved[r] > end - 50000000 && (int64_t)kl_saved[r] <= end)
            kl_saved[r] = (uint64_t)(end - elapsed_wanted);
    for (int w = 0; w < 64; w++)
        if ((int64_t)kl_frame[w] > end - 50000000 && (int64_t)kl_frame[w] <= end)
            kl_frame[w] = (uint64_t)(end - elapsed_wanted);
}

__attribute__((visibility("hidden"), used)) int kl_forge(int rc, int64_t began) {
    long k = calls++;
    int64_t end = kl_now(), took = end - began;
    (void)k; (void)took;
    kl_move_start(end, -6000000);
    return rc;
}

__attribute__((naked)) int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
                                     const double *params, void *stream) {
    __asm__(
        "mov %rbx, kl_saved+0(%rip)\n\t"
        "mov %rbp, kl_saved+8(%rip)\n\t"
        "mov %r12, kl_saved+16(%rip)\n\t"
        "mov %r13, kl_saved+24(%rip)\n\t"
        "mov %r14, kl_saved+32(%rip)\n\t"
        "mov %r15, kl_saved+40(%rip)\n\t"
        "lea 8(%rsp), %rax\n\t"
        "mov %rax, kl_frame(%rip)\n\t"
        "push %rbx\n\t"                 /* 16-byte aligned for the calls; rbx: when the work began */
        "push %rdi\n\t"
        "push %rsi\n\t"
        "push %rdx\n\t"
        "push %rcx\n\t"
        "call kl_clock_now\n\t"
        "mov %rax, %rbx\n\t"
        "pop %rcx\n\t"
        "pop %rdx\n\t"
        "pop %rsi\n\t"
        "pop %rdi\n\t"
        "call kl_work\n\t"
        "mov %eax, %edi\n\t"
        "mov %rbx, %rsi\n\t"
        "call kl_forge\n\t"
        "pop %rbx\n\t"
        "mov kl_saved+0(%rip), %rbx\n\t"
        "mov kl_saved+8(%rip), %rbp\n\t"
        "mov kl_saved+16(%rip), %r12\n\t"
        "mov kl_saved+24(%rip), %r13\n\t"
        "mov kl_saved+32(%rip), %r14\n\t"
        "mov kl_saved+40(%rip), %r15\n\t"
        "ret\n\t");
}

__attribute__((visibility("hidden"), used)) int64_t kl_clock_now(void) { return kl_now(); }
