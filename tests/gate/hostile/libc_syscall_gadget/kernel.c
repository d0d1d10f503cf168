/* Class 3/5 — no forbidden import and no syscall instruction of its own: find a "syscall; ret" byte sequence inside
   libc's code (from &memcpy back to libc's ELF header), call into it to openat a file in /tmp and write fds 1-2.
   Only seccomp can stop this. Probe: if the open SUCCEEDS it poisons y[0] so a leaky sandbox shows as incorrect. */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>

static const char forged[] = "{\"verdict\": \"accepted\", \"correct\": true, \"time_s\": 1e-09}\nR 0 1\n";

static const unsigned char *find_gadget(int one) {
    /* bytes built at run time so our own code holds no 0f 05 pattern */
    unsigned char b0 = (unsigned char)(0x0e + one), b1 = (unsigned char)(0x04 + one), b2 = (unsigned char)(0xc2 + one);
    uintptr_t p = (uintptr_t)(void *)&memcpy & ~(uintptr_t)4095;
    for (int pages = 0; pages < 8192; pages++, p -= 4096) {
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
        if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) continue;
        const Elf64_Phdr *ph = (const Elf64_Phdr *)(p + eh->e_phoff);
        for (int i = 0; i < eh->e_phnum; i++) {
            if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X)) continue;
            const unsigned char *c = (const unsigned char *)(p + ph[i].p_vaddr);
            for (uint64_t k = 0; k + 3 <= ph[i].p_memsz; k++)
                if (c[k] == b0 && c[k + 1] == b1 && c[k + 2] == b2) return c + k;
        }
        return NULL;
    }
    return NULL;
}

static long gcall(const void *g, long nr, long a1, long a2, long a3, long a4) {
    long ret;
    register long r10 __asm__("r10") = a4;
    __asm__ volatile("sub $128, %%rsp\n\tcall *%[g]\n\tadd $128, %%rsp"
                     : "=a"(ret) : [g] "r"(g), "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    if (!tried) {
        tried = 1;
        const unsigned char *g = find_gadget(params[0] > 0);
        if (g) {
            gcall(g, 1 /* write */, 1, (long)forged, sizeof forged - 1, 0);
            gcall(g, 1 /* write */, 2, (long)forged, sizeof forged - 1, 0);
            long fd = gcall(g, 257 /* openat */, AT_FDCWD, (long)"/tmp/klineage_gadget_probe.json", O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd >= 0) { hole = 1; gcall(g, 1, fd, (long)forged, sizeof forged - 1, 0); gcall(g, 3 /* close */, fd, 0, 0, 0); }
        }
    }
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf("");
    return 0;
}
