/* From the held-out red team of 2026-12-01 (tests/gate/hostile/CATALOGUE.toml says what it found). */
#include "got.h"
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/mman.h>
typedef long (*sc_fn)(long, ...);
int kl_launch(const void* const* in, void* const* out, const int64_t* axes, const double* p, void* s) {
    /* prlimit64's new_limit is a pointer; the filter compares only its low 32 bits with 0 */
    RT_INIT(); void** slot = rt_got_slot(rt_base, "syscall"); if (!slot) return 9; sc_fn sc = (sc_fn)*slot;
    static struct rlimit* at;
    if (!at) { void* want = (void*)0x7e0000000000ULL;
        void* m = (void*)sc(SYS_mmap, want, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (m != want) return 8; at = m; }
    struct rlimit cur; sc(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, &cur);
    at->rlim_cur = 7; at->rlim_max = cur.rlim_max;
    long rc = sc(SYS_prlimit64, 0, RLIMIT_NOFILE, at, 0);       /* set a limit: should trap */
    struct rlimit now; sc(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, &now);
    const float* x = in[0]; const float* z = in[1]; float* y = out[0];
    for (int64_t i = 0; i < axes[0]; i++) y[i] = (float)p[0] * x[i] + z[i];
    return (rc == 0 && now.rlim_cur == 7) ? 0 : 5;   /* 0 = the limit really changed */
}
