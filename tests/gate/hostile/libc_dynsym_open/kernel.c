/* Class 4/5 — import nothing forbidden: find libc's ELF header by walking back from &memcpy, look "open" up in libc's
   own GNU hash table and call it through the pointer. Only seccomp can stop it. Probe: a successful open poisons y[0]. */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/types.h>
#include <string.h>

static uintptr_t fix(uintptr_t base, uintptr_t p) { return p < base ? p + base : p; }

static void *libc_lookup(const char *name) {
    uintptr_t base = (uintptr_t)(void *)&memcpy & ~(uintptr_t)4095;
    for (int pages = 0; memcmp((const void *)base, ELFMAG, SELFMAG) != 0; pages++, base -= 4096)
        if (pages > 8192) return NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    const Elf64_Dyn *dyn = NULL;
    for (int i = 0; i < eh->e_phnum; i++) if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn *)(base + ph[i].p_vaddr);
    if (!dyn) return NULL;
    const uint32_t *gh = NULL; const Elf64_Sym *sym = NULL; const char *str = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_GNU_HASH) gh = (const uint32_t *)fix(base, dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_SYMTAB) sym = (const Elf64_Sym *)fix(base, dyn->d_un.d_ptr);
        if (dyn->d_tag == DT_STRTAB) str = (const char *)fix(base, dyn->d_un.d_ptr);
    }
    if (!gh || !sym || !str) return NULL;
    uint32_t nb = gh[0], off = gh[1], bloom = gh[2];
    const uint32_t *buckets = (const uint32_t *)((const uint64_t *)(gh + 4) + bloom), *chain = buckets + nb;
    uint32_t h = 5381;
    for (const char *c = name; *c; c++) h = h * 33 + (unsigned char)*c;
    for (uint32_t i = buckets[h % nb]; i >= off; i++) {
        uint32_t ch = chain[i - off];
        if ((ch | 1) == (h | 1) && sym[i].st_shndx && strcmp(str + sym[i].st_name, name) == 0) return (void *)(base + sym[i].st_value);
        if (ch & 1) break;
    }
    return NULL;
}

static int tried, hole;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!tried) {
        tried = 1;
        int (*op)(const char *, int, ...) = (int (*)(const char *, int, ...))libc_lookup("open");
        ssize_t (*wr)(int, const void *, size_t) = (ssize_t (*)(int, const void *, size_t))libc_lookup("write");
        if (op) {
            int fd = op("/tmp/klineage_dynsym_probe.json", O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd >= 0) { hole = 1; if (wr) wr(fd, "{\"verdict\": \"accepted\"}\n", 24); }
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    if (hole) y[0] = __builtin_nanf("");
    return 0;
}
