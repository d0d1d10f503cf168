#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
static unsigned char* rt_base;
static unsigned char* rt_find_base(void* ret) {
    uintptr_t p = (uintptr_t)ret & ~(uintptr_t)4095;
    for (int i = 0; i < 4096; i++, p -= 4096)
        if (memcmp((void*)p, ELFMAG, SELFMAG) == 0) return (unsigned char*)p;
    return 0;
}
/* address of the GOT slot for symbol `name` in the ELF image at base (JUMP_SLOT or GLOB_DAT) */
static void** rt_got_slot(unsigned char* base, const char* name) {
    Elf64_Ehdr* eh = (Elf64_Ehdr*)base;
    Elf64_Phdr* ph = (Elf64_Phdr*)(base + eh->e_phoff);
    Elf64_Dyn* dyn = 0;
    for (int i = 0; i < eh->e_phnum; i++) if (ph[i].p_type == PT_DYNAMIC) dyn = (Elf64_Dyn*)(base + ph[i].p_vaddr);
    if (!dyn) return 0;
    Elf64_Sym* symtab = 0; const char* strtab = 0; Elf64_Rela* jmprel = 0; size_t pltsz = 0;
    Elf64_Rela* rela = 0; size_t relasz = 0;
    for (Elf64_Dyn* d = dyn; d->d_tag != DT_NULL; d++) {
        uintptr_t v = d->d_un.d_ptr;
        if (v < (uintptr_t)base) v += (uintptr_t)base; /* glibc relocates some in place */
        switch (d->d_tag) {
            case DT_SYMTAB: symtab = (Elf64_Sym*)v; break;
            case DT_STRTAB: strtab = (const char*)v; break;
            case DT_JMPREL: jmprel = (Elf64_Rela*)v; break;
            case DT_PLTRELSZ: pltsz = d->d_un.d_val; break;
            case DT_RELA: rela = (Elf64_Rela*)v; break;
            case DT_RELASZ: relasz = d->d_un.d_val; break;
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        Elf64_Rela* r = pass ? rela : jmprel; size_t n = (pass ? relasz : pltsz) / sizeof(Elf64_Rela);
        for (size_t i = 0; r && i < n; i++) {
            unsigned s = ELF64_R_SYM(r[i].r_info);
            if (s && strcmp(strtab + symtab[s].st_name, name) == 0) return (void**)(base + r[i].r_offset);
        }
    }
    return 0;
}
/* Ensure rt_base from a return address into the runner. */
#define RT_INIT() do { if (!rt_base) rt_base = rt_find_base(__builtin_return_address(0)); } while (0)
/* an exported symbol of the ELF image at base (dynsym scanned up to dynstr) */
static void* rt_export(unsigned char* base, const char* name) {
    Elf64_Ehdr* eh = (Elf64_Ehdr*)base; Elf64_Phdr* ph = (Elf64_Phdr*)(base + eh->e_phoff); Elf64_Dyn* dyn = 0;
    for (int i = 0; i < eh->e_phnum; i++) if (ph[i].p_type == PT_DYNAMIC) dyn = (Elf64_Dyn*)(base + ph[i].p_vaddr);
    Elf64_Sym* symtab = 0; const char* strtab = 0;
    for (Elf64_Dyn* d = dyn; d && d->d_tag != DT_NULL; d++) {
        uintptr_t v = d->d_un.d_ptr; if (v < (uintptr_t)base) v += (uintptr_t)base;
        if (d->d_tag == DT_SYMTAB) symtab = (Elf64_Sym*)v; if (d->d_tag == DT_STRTAB) strtab = (const char*)v; }
    if (!symtab || !strtab) return 0;
    for (Elf64_Sym* s = symtab; (const char*)s < strtab; s++)
        if (s->st_value && s->st_shndx && strcmp(strtab + s->st_name, name) == 0) return base + s->st_value;
    return 0;
}
