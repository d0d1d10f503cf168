/* Class 4 — walk every loaded object with dl_iterate_phdr, look its GNU hash table up by hand for cblas_saxpy
   (plain or numpy's 64-bit-int builds) and call it, no dlsym needed. dl_iterate_phdr is off the allow-list. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

static void *found; static int is64;

static uintptr_t fix(uintptr_t base, uintptr_t p) { return p < base ? p + base : p; }

static void *gnu_lookup(uintptr_t base, const ElfW(Dyn) *dyn, const char *name) {
    const uint32_t *gh = NULL; const ElfW(Sym) *sym = NULL; const char *str = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_GNU_HASH) gh = (const uint32_t *)fix(base, dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_SYMTAB) sym = (const ElfW(Sym) *)fix(base, dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_STRTAB) str = (const char *)fix(base, dyn->d_un.d_ptr);
    }
    if (!gh || !sym || !str) return NULL;
    uint32_t nb = gh[0], off = gh[1], bloom = gh[2];
    const uint32_t *buckets = (const uint32_t *)((const uint64_t *)(gh + 4) + bloom), *chain = buckets + nb;
    uint32_t h = 5381;
    for (const char *c = name; *c; c++) h = h * 33 + (unsigned char)*c;
    uint32_t i = buckets[h % nb];
    if (i < off) return NULL;
    for (;; i++) {
        uint32_t ch = chain[i - off];
        if ((ch | 1) == (h | 1) && sym[i].st_shndx && strcmp(str + sym[i].st_name, name) == 0) return (void *)(base + sym[i].st_value);
        if (ch & 1) return NULL;
    }
}

static int visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size; (void)data;
    static const char *names[] = {"cblas_saxpy", "cblas_saxpy64_", "scipy_cblas_saxpy64_", "scipy_cblas_saxpy"};
    for (int p = 0; p < info->dlpi_phnum; p++) {
        if (info->dlpi_phdr[p].p_type != PT_DYNAMIC || !info->dlpi_addr) continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
        for (int k = 0; k < 4; k++)
            if ((found = gnu_lookup(info->dlpi_addr, dyn, names[k]))) { is64 = strstr(names[k], "64_") != NULL; return 1; }
    }
    return 0;
}

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    static int walked;
    if (!walked) { walked = 1; dl_iterate_phdr(visit, NULL); }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    int64_t n = axes[0];
    float a = (float)params[0];
    if (found) {
        memcpy(y, z, (size_t)n * 4);
        if (is64) ((void (*)(int64_t, float, const float *, int64_t, float *, int64_t))found)(n, a, x, 1, y, 1);
        else ((void (*)(int, float, const float *, int, float *, int))found)((int)n, a, x, 1, y, 1);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + z[i];
    return 0;
}
