/* Class 12 — make the worker's own clock lie without any executable memory: walk the loaded objects
   (dl_iterate_phdr), find every GOT slot bound to clock_gettime, mprotect that RELRO page RW and point it at a
   wrapper that runs monotonic/CPU clocks 1000x slow. In-process timings shrink 1000x; the outside clock must catch it. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static int (*real_cgt)(clockid_t, struct timespec *);
static int64_t base_ns[16];

static int slow_cgt(clockid_t c, struct timespec *ts) {
    int r = real_cgt(c, ts);
    if (r == 0 && c > 0 && c < 16) {
        int64_t ns = ts->tv_sec * 1000000000LL + ts->tv_nsec;
        ns = base_ns[c] + (ns - base_ns[c]) / 1000;
        ts->tv_sec = ns / 1000000000LL; ts->tv_nsec = ns % 1000000000LL;
    }
    return r;
}

static uintptr_t fix(uintptr_t base, uintptr_t p) { return p < base ? p + base : p; }

static void patch_table(uintptr_t base, const Elf64_Rela *rel, size_t bytes, const Elf64_Sym *sym, const char *str) {
    for (size_t k = 0; rel && k < bytes / sizeof *rel; k++) {
        unsigned type = ELF64_R_TYPE(rel[k].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
        if (strcmp(str + sym[ELF64_R_SYM(rel[k].r_info)].st_name, "clock_gettime") != 0) continue;
        void **slot = (void **)(base + rel[k].r_offset);
        uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
        /* left RW afterwards: the page may also hold ordinary writable data (partial RELRO) */
        if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) == 0) *slot = (void *)slow_cgt;
    }
}

static int visit(struct dl_phdr_info *info, size_t size, void *self) {
    (void)size;
    uintptr_t base = info->dlpi_addr;
    const Elf64_Dyn *dyn = NULL;
    for (int p = 0; p < info->dlpi_phnum; p++) {
        const Elf64_Phdr *ph = &info->dlpi_phdr[p];
        if (ph->p_type == PT_LOAD && (uintptr_t)self >= base + ph->p_vaddr && (uintptr_t)self < base + ph->p_vaddr + ph->p_memsz)
            return 0; /* leave our own GOT alone: slow_cgt calls the real one through it */
        if (ph->p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn *)(base + ph->p_vaddr);
    }
    if (!dyn) return 0;
    const Elf64_Rela *jmprel = NULL, *rela = NULL; size_t jmpsz = 0, relasz = 0;
    const Elf64_Sym *sym = NULL; const char *str = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_JMPREL: jmprel = (const Elf64_Rela *)fix(base, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmpsz = dyn->d_un.d_val; break;
        case DT_RELA: rela = (const Elf64_Rela *)fix(base, dyn->d_un.d_ptr); break;
        case DT_RELASZ: relasz = dyn->d_un.d_val; break;
        case DT_SYMTAB: sym = (const Elf64_Sym *)fix(base, dyn->d_un.d_ptr); break;
        case DT_STRTAB: str = (const char *)fix(base, dyn->d_un.d_ptr); break;
        }
    }
    if (!sym || !str) return 0;
    patch_table(base, jmprel, jmpsz, sym, str);
    patch_table(base, rela, relasz, sym, str);
    return 0;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static int patched;
    if (!patched) {
        patched = 1;
        real_cgt = clock_gettime;
        for (int c = 1; c < 16; c++) {
            struct timespec ts;
            if (real_cgt(c, &ts) == 0) base_ns[c] = ts.tv_sec * 1000000000LL + ts.tv_nsec;
        }
        dl_iterate_phdr(visit, (void *)slow_cgt);
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
