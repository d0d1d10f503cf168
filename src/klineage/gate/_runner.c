/* klineage's candidate runner: the only process that ever loads a candidate kernel.
 *
 * Everything here runs in the untrusted process, so nothing it reports is believed on its own:
 * the trusted side (gate/sandbox.py) reads the outputs from shared memory, compares them with the
 * reference itself, and checks every reported time against its own clock. This program's job is
 * to keep the candidate's address space small (libc, libm, OpenMP, libstdc++, the kernel) and to
 * box it in before any candidate code runs:
 *   - inputs are mapped from a read-only descriptor (no write, and no mprotect can add one);
 *   - all other descriptors are closed; root drops to nobody; no new privileges;
 *   - a seccomp filter, in two steps: while the kernel is loaded (its constructors run here)
 *     only read-only opens; after that no opens at all, no new executable memory, no signal
 *     handlers, clone only for threads, no processes, sockets or ptrace. A forbidden call traps
 *     (SIGSYS), which is reported with its number and ends the process.
 * Built with KL_PYTHON (kl_runner_python, for ModelNew kernels only) it keeps root's uid without
 * capabilities and allows the few more calls an embedded interpreter makes (python_rules); with
 * KL_CUDA too (kl_runner_cuda_python) it becomes nobody like the CUDA runner, the CUDA deny-list
 * already allows those calls, and only reading signal handlers while loading is added to it.
 *
 * Descriptors: 0 /dev/null, 1 and 2 the log; argv: KERNEL ENTRY IN_BYTES OUT_BYTES CMD_FD REPLY_FD
 * IN_FD OUT_FD [FLUSH_BYTES] (commands in, replies out, the inputs' read-only descriptor, the
 * outputs', and how much memory to write before each call so private caches start cold). With
 * CUDA, IN and OUT are "pipe": the first command line is "H in_handle out_handle", the device
 * arenas' IPC handles (a command line is readable by any process of the machine).
 * Commands (one line each) and replies:
 *   C nin nout naxes nparams in_off... out_off... axes... params(%a)...  ->  R rc ns
 *                                     (with CUDA, or X context|unfinished: GPU work it cannot time)
 *   P offset length prot(0|3)                                            ->  K
 *   Q                                                                     ->  (exit 0)
 * On start: "READY in_base out_base" (addresses, to name what a fault hit) or "E message". A fatal signal: "S signo address syscall peak_rss_kib".
 * A trapped call also writes its stack to the log, after a KL_TRAP_STACK line.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#ifdef KL_CUDA
#include <cuda_runtime_api.h>
#include <cupti.h>
#endif
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#ifdef KL_PYTHON
#include <sys/ioctl.h>
#endif
#include <time.h>
#include <unistd.h>

/* Calls newer than some C libraries' headers: numbered alike on every architecture since 424,
 * so a filter built with old headers still names them (the kernel it runs on may have them). */
#define KL_SYSCALL_NUMBERS(X) \
    X(pidfd_send_signal, 424) X(io_uring_setup, 425) X(io_uring_enter, 426) \
    X(io_uring_register, 427) X(open_tree, 428) X(move_mount, 429) X(fsopen, 430) \
    X(fsconfig, 431) X(fsmount, 432) X(fspick, 433) X(mount_setattr, 442) X(fchmodat2, 452) \
    X(setxattrat, 463) X(removexattrat, 466) X(open_tree_attr, 467) X(file_setattr, 469)

static int CMD_FD, REPLY_FD, IN_FD, OUT_FD; /* given on the command line */
#define MAX_ARGS 64
#define NOBODY 65534
#define TRAP_STACK "KL_TRAP_STACK" /* gate/sandbox.py reads the frames after this line */

#if defined(__x86_64__)
#define KL_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KL_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "the runner knows the system calls of x86-64 and aarch64 only"
#endif

static char* in_base;
static char* out_base;
static size_t in_bytes, out_bytes;

typedef int (*launch_fn)(const void* const*, void* const*, const int64_t*, const double*, void*);

static void say(const char* text) {
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t w = write(REPLY_FD, text, n);
        if (w <= 0) _exit(3);
        text += w;
        n -= (size_t)w;
    }
}

/* A reply to a command, then a stop of the whole process, at once: the trusted side waits for
 * that stop before it touches anything, and no thread of the kernel's may run between its
 * answer and the stop (a helper finishing a call after the reply ran untimed for as long as the
 * trusted side took to send its own SIGSTOP, 25-190 us). What the process burns after its
 * reply anyway is charged to the call (gate/sandbox.py). */
static void answer(const char* text) {
    say(text);
    raise(SIGSTOP);
}

static void fail(const char* what, const char* detail) {
    char line[512];
    snprintf(line, sizeof line, "E %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    for (char* c = line; c[1]; c++)
        if (*c == '\n') *c = ' ';
    say(line);
    _exit(3);
}

/* -- fatal signals ------------------------------------------------------------------------- */
static void on_fatal(int signo, siginfo_t* info, void* context) {
    (void)context;
    char line[96];
    int nr = -1;
#ifdef SIGSYS
    if (signo == SIGSYS) nr = info->si_syscall;
#endif
    struct rusage usage;
    long peak_kib = getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_maxrss : -1;
    int n = snprintf(line, sizeof line, "S %d %p %d %ld\n", signo, info->si_addr, nr, peak_kib);
    if (n > 0) (void)!write(REPLY_FD, line, (size_t)n);
    if (signo == SIGSYS) { /* who made the call, for the verdict's reason (the log is only a hint) */
        void* frames[40];
        static const char head[] = "\n" TRAP_STACK "\n";
        (void)!write(2, head, sizeof head - 1);
        backtrace_symbols_fd(frames, backtrace(frames, 40), 2);
    }
    _exit(128 + signo);
}

static void catch_fatal_signals(void) {
    void* frame;
    backtrace(&frame, 1); /* loads the unwinder now: the handler runs where nothing can be opened */
    static char alt[1 << 16];
    stack_t stack = {.ss_sp = alt, .ss_size = sizeof alt};
    sigaltstack(&stack, NULL);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fatal;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigfillset(&action.sa_mask);
    int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS, SIGABRT, SIGTRAP, SIGXCPU, SIGXFSZ};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) sigaction(fatal[i], &action, NULL);
}

/* -- seccomp ------------------------------------------------------------------------------- */
struct filter {
    struct sock_filter code[512];
    unsigned short n;
};

static void emit(struct filter* f, struct sock_filter insn) {
    if (f->n >= sizeof f->code / sizeof f->code[0]) fail("seccomp", "filter too long");
    f->code[f->n++] = insn;
}

#define ARG_LO(k) (offsetof(struct seccomp_data, args) + 8 * (k))
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the seccomp argument offsets assume a little-endian machine"
#endif
#define ARG_HI(k) (ARG_LO(k) + 4)

static void load_nr(struct filter* f) {
    emit(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
}

/* nr -> action */
static void rule(struct filter* f, long nr, uint32_t action) {
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action));
}

/* nr -> (arg k & mask) in values ? pass : otherwise; the accumulator is nr again afterwards. */
static void rule_arg(struct filter* f, long nr, int k, uint32_t mask, const uint32_t* values, int count,
                     uint32_t pass, uint32_t otherwise) {
    int body = 2 + count + 2; /* load, and, compares, two returns */
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, (uint8_t)body));
    emit(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(k)));
    emit(f, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask));
    for (int i = 0; i < count; i++) /* equal: jump to the pass return */
        emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, values[i],
                                             (uint8_t)(count - i), 0));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, otherwise));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, pass));
}

/* prlimit64 only reads limits, and only its own: pid 0 or itself, and a new limit that is NULL in
 * all 64 bits (a pointer whose low half is 0 is still a pointer). Anything else traps. */
static void rule_prlimit(struct filter* f, uint32_t self) {
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prlimit64, 0, 10));
    emit(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0));
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
    emit(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)));
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
    emit(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(2)));
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
}

static void header(struct filter* f) {
    emit(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, KL_AUDIT_ARCH, 1, 0));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    load_nr(f);
#if defined(__x86_64__)
    /* x32 system calls alias the 64-bit ones with a high bit set: none are legitimate here. */
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
}

#define ALLOW SECCOMP_RET_ALLOW
#define TRAP SECCOMP_RET_TRAP
#define ERR(e) (SECCOMP_RET_ERRNO | (e))

#ifndef KL_CUDA
/* What any kernel may do at any time: memory, threads, time, futexes, exiting. */
static void common_rules(struct filter* f) {
    static const long allowed[] = {
        SYS_munmap, SYS_mremap, SYS_brk, SYS_futex, SYS_set_robust_list,
        SYS_get_robust_list, SYS_sched_yield, SYS_sched_getaffinity, SYS_getcpu, SYS_nanosleep,
        SYS_clock_nanosleep, SYS_clock_gettime, SYS_clock_getres, SYS_gettimeofday, SYS_getpid,
        SYS_gettid, SYS_getppid, SYS_getuid, SYS_geteuid, SYS_getgid, SYS_getegid, SYS_getrusage,
        SYS_times, SYS_sysinfo, SYS_uname, SYS_exit, SYS_exit_group, SYS_rt_sigreturn,
        SYS_rt_sigprocmask, SYS_sigaltstack, SYS_restart_syscall, SYS_close, SYS_fstat,
        SYS_newfstatat, SYS_lseek, SYS_getrandom, SYS_sched_getparam, SYS_sched_getscheduler,
        SYS_membarrier, SYS_seccomp, /* a filter added by the kernel can only restrict it further */
#ifdef SYS_rseq
        SYS_rseq,
#endif
#ifdef SYS_futex_waitv
        SYS_futex_waitv,
#endif
#ifdef SYS_time
        SYS_time,
#endif
#ifdef SYS_getrlimit
        SYS_getrlimit,
#endif
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) rule(f, allowed[i], ALLOW);
    uint32_t thread = CLONE_THREAD;
    rule_arg(f, SYS_clone, 0, CLONE_THREAD, &thread, 1, ALLOW, TRAP); /* threads, never processes */
    rule(f, SYS_clone3, ERR(ENOSYS));                                  /* glibc falls back to clone */
    uint32_t self = (uint32_t)getpid();
    rule_arg(f, SYS_tgkill, 0, 0xffffffffu, &self, 1, ALLOW, TRAP); /* abort() signals itself */
    rule_prlimit(f, self);
    rule(f, SYS_sched_setaffinity, ERR(EPERM));                        /* stays on its cores */
    /* Advice that only drops or hints at private pages; never MADV_REMOVE (it frees shared ones). */
    uint32_t advice[] = {MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED, MADV_DONTNEED,
                         MADV_FREE, MADV_HUGEPAGE, MADV_NOHUGEPAGE};
    rule_arg(f, SYS_madvise, 2, 0xffffffffu, advice, 8, ALLOW, TRAP);
    uint32_t logs[] = {1, 2};
    rule_arg(f, SYS_writev, 0, 0xffffffffu, logs, 2, ALLOW, TRAP);
    rule_arg(f, SYS_ioctl, 0, 0xffffffffu, logs, 2, ALLOW, TRAP); /* isatty() on the log */
}
#endif

static void install(struct filter* f) {
    struct sock_fprog program = {.len = f->n, .filter = f->code};
    /* TSYNC: threads that exist already (the CUDA driver's) are filtered too. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0)
        fail("seccomp filter refused", strerror(errno));
}

#ifdef KL_PYTHON
/* nr -> allowed when argument k is NULL in all 64 bits (a read, such as sigaction's old handler). */
static void rule_null_arg(struct filter* f, long nr, int k) {
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 6));
    emit(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(k)));
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
    emit(f, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(k)));
    emit(f, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, TRAP));
    emit(f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));
}
#endif

#if defined(KL_PYTHON) && !defined(KL_CUDA)
/* The extra calls an embedded interpreter makes (runner kl_runner_python only; docs/gate.md,
 * "Python candidates"). Checked before the common rules. */
static void python_rules(struct filter* f, int loading) {
    rule(f, SYS_mbind, ERR(ENOSYS)); /* torch's allocator asks for NUMA placement: none */
    if (loading) {
        static const long reading[] = {SYS_getcwd, SYS_getdents64};
        for (size_t i = 0; i < sizeof reading / sizeof reading[0]; i++) rule(f, reading[i], ALLOW);
        /* close-on-exec on the files it reads, and a second descriptor of one (linecache) */
        uint32_t flag_reads[] = {F_GETFD, F_SETFD, F_GETFL, F_DUPFD_CLOEXEC};
        rule_arg(f, SYS_fcntl, 1, 0xffffffffu, flag_reads, 4, ALLOW, TRAP);
        uint32_t is_a_tty = TCGETS; /* isatty() on what it opens: no */
        rule_arg(f, SYS_ioctl, 1, 0xffffffffu, &is_a_tty, 1, ERR(ENOTTY), TRAP);
        rule_null_arg(f, SYS_rt_sigaction, 1); /* the signal module reads every handler */
        /* selectors probes for epoll and poll when imported; it falls back to select() */
        rule(f, SYS_epoll_create1, ERR(ENOSYS));
        rule(f, SYS_poll, ERR(ENOSYS));
    }
}
#endif

#ifndef KL_CUDA
/* While the kernel loads: read-only opens, and the mappings the dynamic loader makes. */
static void filter_for_loading(void) {
    static struct filter f;
    header(&f);
#ifdef KL_PYTHON
    python_rules(&f, 1);
#endif
    common_rules(&f);
    uint32_t read_only = 0;
    uint32_t write_bits = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND;
#ifdef SYS_open
    rule_arg(&f, SYS_open, 1, write_bits, &read_only, 1, ALLOW, ERR(EACCES));
#endif
    rule_arg(&f, SYS_openat, 2, write_bits, &read_only, 1, ALLOW, ERR(EACCES));
#ifdef SYS_openat2
    rule(&f, SYS_openat2, ERR(ENOSYS));
#endif
    uint32_t outputs[] = {1, 2, (uint32_t)REPLY_FD};
    rule_arg(&f, SYS_write, 0, 0xffffffffu, outputs, 3, ALLOW, TRAP);
    static const long loader[] = {SYS_read, SYS_pread64, SYS_mmap, SYS_mprotect,
#ifdef SYS_access
                                  SYS_access,
#endif
#ifdef SYS_readlink
                                  SYS_readlink,
#endif
                                  SYS_faccessat, SYS_readlinkat, SYS_statfs, SYS_fstatfs};
    for (size_t i = 0; i < sizeof loader / sizeof loader[0]; i++) rule(&f, loader[i], ALLOW);
    emit(&f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, TRAP));
    install(&f);
}

/* From the first call on: no opens at all, no new executable memory, fixed descriptors. */
static void filter_for_running(void) {
    static struct filter f;
    header(&f);
#ifdef KL_PYTHON
    python_rules(&f, 0);
#endif
    common_rules(&f);
#ifdef SYS_open
    rule(&f, SYS_open, ERR(EACCES));
#endif
    rule(&f, SYS_openat, ERR(EACCES));
    uint32_t commands = (uint32_t)CMD_FD, zero = 0;
    uint32_t outputs[] = {1, 2, (uint32_t)REPLY_FD};
    rule_arg(&f, SYS_read, 0, 0xffffffffu, &commands, 1, ALLOW, TRAP);
    rule_arg(&f, SYS_write, 0, 0xffffffffu, outputs, 3, ALLOW, TRAP);
    rule_arg(&f, SYS_mmap, 2, PROT_EXEC, &zero, 1, ALLOW, TRAP);
    rule_arg(&f, SYS_mprotect, 2, PROT_EXEC, &zero, 1, ALLOW, TRAP);
    emit(&f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, TRAP));
    install(&f);
}
#else
/* With CUDA the driver lives in this process and talks to the GPU through its descriptors
 * (ioctl, mmap, poll, eventfds) in ways no list can pin down, and its threads exist before the
 * filters (TSYNC filters them too), so these filters name what is denied instead: processes,
 * sockets, ptrace, signal handlers, file system changes; while loading, read-only opens; from
 * the first call on, no opens and no new executable memory. The driver's descriptors are the
 * only ones open besides ours. */
#define KL_NUMBER_NAME(name, number) KL_NR_##name = number,
enum { KL_SYSCALL_NUMBERS(KL_NUMBER_NAME) };

/* Changes to the file system and to files' metadata (a file's owner needs no capability).
 * Not ftruncate or fallocate: they need a descriptor open for writing, and the only ones a
 * candidate has are its log and the reply pipe. */
static const long file_changes[] = {
#ifdef SYS_creat
    SYS_creat, SYS_unlink, SYS_rename, SYS_mkdir, SYS_rmdir, SYS_symlink, SYS_link,
#endif
    SYS_unlinkat, SYS_renameat, SYS_renameat2, SYS_mkdirat, SYS_symlinkat, SYS_linkat,
#ifdef SYS_chmod
    SYS_chmod, SYS_chown, SYS_lchown, SYS_utime, SYS_utimes, SYS_futimesat, SYS_mknod,
#endif
    SYS_truncate, SYS_fchmod, SYS_fchmodat, SYS_fchown, SYS_fchownat, SYS_utimensat,
    SYS_mknodat, SYS_setxattr, SYS_lsetxattr, SYS_fsetxattr, SYS_removexattr,
    SYS_lremovexattr, SYS_fremovexattr, KL_NR_fchmodat2, KL_NR_setxattrat, KL_NR_removexattrat,
    KL_NR_file_setattr,
};

static void filter_for_loading(void) {
    static struct filter f;
    header(&f);
    uint32_t read_only = 0, thread = CLONE_THREAD, self = (uint32_t)getpid();
    uint32_t write_bits = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND;
#ifdef SYS_open
    rule_arg(&f, SYS_open, 1, write_bits, &read_only, 1, ALLOW, ERR(EACCES));
#endif
    rule_arg(&f, SYS_openat, 2, write_bits, &read_only, 1, ALLOW, ERR(EACCES));
#ifdef SYS_openat2
    rule(&f, SYS_openat2, ERR(ENOSYS));
#endif
    rule_arg(&f, SYS_clone, 0, CLONE_THREAD, &thread, 1, ALLOW, TRAP);
    rule(&f, SYS_clone3, ERR(ENOSYS));
    rule_arg(&f, SYS_tgkill, 0, 0xffffffffu, &self, 1, ALLOW, TRAP);
    rule_prlimit(&f, self);
    rule(&f, SYS_sched_setaffinity, ERR(EPERM));
#ifdef KL_PYTHON
    rule_null_arg(&f, SYS_rt_sigaction, 1); /* the signal module reads every handler; a new one traps */
    /* torch counts GPUs through NVML (ctypes), and nvmlInit, as any user, remakes the GPU's
     * device links (unlink, symlink, mkdir: seen on the H200, one after another): while
     * loading, file changes are refused as the kernel refuses nobody outside its own files
     * (nothing changes either way), and from the first call on they trap. */
    uint32_t refused_change = ERR(EACCES);
#else
    uint32_t refused_change = TRAP;
#endif
    for (size_t i = 0; i < sizeof file_changes / sizeof file_changes[0]; i++)
        rule(&f, file_changes[i], refused_change);
    static const long denied[] = {
        SYS_execve, SYS_execveat, SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen,
        SYS_accept, SYS_accept4, SYS_sendto, SYS_sendmsg, SYS_recvfrom, SYS_recvmsg, SYS_ptrace,
        SYS_process_vm_readv, SYS_process_vm_writev, SYS_kill, SYS_tkill, SYS_rt_sigaction,
        SYS_pkey_mprotect, SYS_memfd_create, SYS_prctl, SYS_setsid, SYS_setpgid, SYS_chdir,
        SYS_fchdir, SYS_chroot, SYS_mount, SYS_unshare, SYS_setns, SYS_pidfd_open,
        SYS_pidfd_getfd, SYS_kcmp, SYS_name_to_handle_at, SYS_open_by_handle_at,
#ifdef SYS_fork
        SYS_fork, SYS_vfork,
#endif
        /* io_uring does its work outside the filter: opens, unlinks, sockets, all unchecked */
        KL_NR_io_uring_setup, KL_NR_io_uring_enter, KL_NR_io_uring_register,
        /* signals to other processes (other runners are nobody too) */
        SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo, KL_NR_pidfd_send_signal,
        /* the same user's keyrings; BPF programs; mounts */
        SYS_keyctl, SYS_add_key, SYS_request_key, SYS_bpf, SYS_umount2, SYS_pivot_root,
        KL_NR_open_tree, KL_NR_open_tree_attr, KL_NR_move_mount, KL_NR_fsopen, KL_NR_fsconfig,
        KL_NR_fsmount, KL_NR_fspick, KL_NR_mount_setattr,
    };
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) rule(&f, denied[i], TRAP);
    /* Another process's scheduling (another runner's, to slow what it times): refused. */
    static const long others_scheduling[] = {SYS_setpriority, SYS_sched_setscheduler,
                                             SYS_sched_setparam, SYS_sched_setattr, SYS_ioprio_set};
    for (size_t i = 0; i < sizeof others_scheduling / sizeof others_scheduling[0]; i++)
        rule(&f, others_scheduling[i], ERR(EPERM));
    emit(&f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));
    install(&f);
}

static void filter_for_running(void) {
    static struct filter f;
    header(&f);
    uint32_t zero = 0;
#ifdef SYS_open
    rule(&f, SYS_open, ERR(EACCES));
#endif
    rule(&f, SYS_openat, ERR(EACCES));
    rule_arg(&f, SYS_mmap, 2, PROT_EXEC, &zero, 1, ALLOW, TRAP);
    rule_arg(&f, SYS_mprotect, 2, PROT_EXEC, &zero, 1, ALLOW, TRAP);
#ifdef KL_PYTHON
    rule(&f, SYS_rt_sigaction, TRAP); /* handlers are read while loading only, as on the CPU */
    for (size_t i = 0; i < sizeof file_changes / sizeof file_changes[0]; i++)
        rule(&f, file_changes[i], TRAP); /* a trap outranks the first filter's refusal */
#endif
    emit(&f, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));
    install(&f);
}
#endif

/* -- setup --------------------------------------------------------------------------------- */
#ifdef KL_CUDA
static cudaStream_t stream;
static cudaEvent_t started, finished;

static void check_cuda(cudaError_t error, const char* what) {
    if (error != cudaSuccess) fail(what, cudaGetErrorString(error));
}

/* -- every GPU activity of the process, timed (CUPTI's activity records) ------------------------
 * The harness stream's events bracket only that stream: work on cudaStreamPerThread, on a stream
 * made through the driver, or in a graph launched elsewhere ran after the end event, and on an
 * ~80 us kernel the trusted side's round trip could not see 16 us of it (held-out review,
 * 2026-12-03). CUPTI records every kernel, copy and set of this process with its GPU start and
 * end, whatever stream, graph or context ran it: a call lasts from its first activity to its
 * last. Everything here lives in the candidate's process, as the events do: the trusted side's
 * clock still bounds a forged reading (gate/_clocks.py). */
#if CUPTI_API_VERSION >= 130200
typedef CUpti_ActivityKernel11 kernel_record;
#elif CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_record;
#else
typedef CUpti_ActivityKernel9 kernel_record;
#endif
#if CUPTI_API_VERSION >= 26
typedef CUpti_ActivityMemcpy6 copy_record;
#else
typedef CUpti_ActivityMemcpy5 copy_record;
#endif
typedef CUpti_ActivityMemset4 set_record;
#define ACTIVITY_BUFFER (1 << 18)
#define KEPT_BUFFERS 64

static pthread_mutex_t activity_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint64_t from, first, last; /* the call's start on CUPTI's clock; its activities' span */
    unsigned long seen, unfinished;
} span;
static int contexts_made;

static void check_cupti(CUptiResult result, const char* what) {
    if (result == CUPTI_SUCCESS) return;
    const char* text = NULL;
    cuptiGetResultString(result, &text);
    fail(what, text);
}

/* Buffers are kept, written through once, and handed out again: a new one each flush was fresh
 * pages to fault in inside every call, more of them the more streams a kernel used. */
static uint8_t* kept[KEPT_BUFFERS];
static int kept_count;

static void CUPTIAPI give_buffer(uint8_t** buffer, size_t* size, size_t* max_records) {
    pthread_mutex_lock(&activity_lock);
    *buffer = kept_count ? kept[--kept_count] : NULL;
    pthread_mutex_unlock(&activity_lock);
    if (!*buffer && (*buffer = aligned_alloc(8, ACTIVITY_BUFFER)) != NULL)
        memset(*buffer, 0, ACTIVITY_BUFFER);
    *size = *buffer ? ACTIVITY_BUFFER : 0;
    *max_records = 0;
}

/* Called with activity_lock held. Work that ended before the call began is from before it (its
 * constructors'); work still running when the call began counts from the call's start. */
static void note_activity(uint64_t start, uint64_t end) {
    if (start == 0 || end == 0 || end < start) {
        span.unfinished++;
        return;
    }
    if (end < span.from) return;
    if (start < span.from) start = span.from;
    if (span.seen == 0 || start < span.first) span.first = start;
    if (end > span.last) span.last = end;
    span.seen++;
}

static void CUPTIAPI take_buffer(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                 size_t valid) {
    (void)size;
    CUpti_Activity* record = NULL;
    size_t dropped = 0;
    pthread_mutex_lock(&activity_lock);
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            const kernel_record* kernel = (const kernel_record*)record;
            note_activity(kernel->start, kernel->end);
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const copy_record* copy = (const copy_record*)record;
            note_activity(copy->start, copy->end);
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const set_record* set = (const set_record*)record;
            note_activity(set->start, set->end);
        }
    }
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
        span.unfinished += dropped; /* a record lost is activity we cannot time */
    if (kept_count < KEPT_BUFFERS) {
        kept[kept_count++] = buffer;
        buffer = NULL;
    }
    pthread_mutex_unlock(&activity_lock);
    free(buffer);
}

/* A context of the candidate's own runs work that the call's device synchronisation does not
 * wait for: the call cannot be timed. */
static void CUPTIAPI on_resource(void* data, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                 const void* info) {
    (void)data, (void)info;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
        __atomic_add_fetch(&contexts_made, 1, __ATOMIC_RELAXED);
}

static void start_activity_records(void) {
    for (; kept_count < 8; kept_count++) {
        kept[kept_count] = aligned_alloc(8, ACTIVITY_BUFFER);
        if (!kept[kept_count]) fail("CUPTI's buffers", "out of memory");
        memset(kept[kept_count], 0, ACTIVITY_BUFFER);
    }
    check_cupti(cuptiActivityRegisterCallbacks(give_buffer, take_buffer), "CUPTI's buffers");
    static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                               CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        check_cupti(cuptiActivityEnable(kinds[i]), "CUPTI's activity records");
    CUpti_SubscriberHandle subscriber;
    check_cupti(cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_resource, NULL), "cuptiSubscribe");
    check_cupti(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                    CUPTI_CBID_RESOURCE_CONTEXT_CREATED), "cuptiEnableCallback");
}

static void begin_span(void) {
    uint64_t now = 0;
    check_cupti(cuptiGetTimestamp(&now), "cuptiGetTimestamp");
    pthread_mutex_lock(&activity_lock);
    span.from = now;
    span.first = span.last = 0;
    span.seen = span.unfinished = 0;
    pthread_mutex_unlock(&activity_lock);
}

/* After the device is synchronised: every record of the call, completed ones first, then any
 * still incomplete (work the synchronisation did not wait for). Returns the call's span in ns,
 * or -1 when some activity could not be timed. */
static int64_t end_span(void) {
    check_cupti(cuptiActivityFlushAll(0), "cuptiActivityFlushAll");
    check_cupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
    pthread_mutex_lock(&activity_lock);
    int64_t ns = span.unfinished ? -1 : span.seen ? (int64_t)(span.last - span.first) : 0;
    pthread_mutex_unlock(&activity_lock);
    return ns;
}

/* "hex(handle):offset" -> the trusted side's device allocation, mapped here. */
static char* open_arena(const char* text) {
    cudaIpcMemHandle_t handle;
    if (strlen(text) < 2 * sizeof handle + 2 || text[2 * sizeof handle] != ':')
        fail("bad IPC handle", text);
    for (size_t i = 0; i < sizeof handle; i++) {
        unsigned byte = 0;
        if (sscanf(text + 2 * i, "%2x", &byte) != 1) fail("bad IPC handle", text);
        handle.reserved[i] = (char)byte;
    }
    void* base = NULL;
    check_cuda(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess),
               "cannot open the shared device memory");
    return (char*)base + strtoull(text + 2 * sizeof handle + 1, NULL, 10);
}

/* The context, the shared memory, the timed stream and its events all exist before any
 * candidate code does. The sync spins: its wake-up is what bounds how much work could hide
 * off the timed stream, and a spinning wait wakes soonest. */
static void start_cuda(const char* in_handle, const char* out_handle) {
    check_cuda(cudaSetDeviceFlags(cudaDeviceScheduleSpin), "cudaSetDeviceFlags");
    check_cuda(cudaFree(0), "cannot create a CUDA context");
    in_base = open_arena(in_handle);
    out_base = open_arena(out_handle);
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaEventCreate(&started), "cudaEventCreate");
    check_cuda(cudaEventCreate(&finished), "cudaEventCreate");
    /* Both allocators once, before the filters: the driver opens what they need now (a first
     * cudaMallocAsync opens a device file), and the pool keeps its memory mapped. */
    void* probe = NULL;
    check_cuda(cudaMalloc(&probe, 1 << 20), "cudaMalloc");
    check_cuda(cudaFree(probe), "cudaFree");
    cudaMemPool_t pool;
    uint64_t keep = UINT64_MAX;
    check_cuda(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
    check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "pool");
    check_cuda(cudaMallocAsync(&probe, 1 << 20, stream), "cudaMallocAsync");
    check_cuda(cudaFreeAsync(probe, stream), "cudaFreeAsync");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    start_activity_records();
}
#endif

#ifndef KL_CUDA
static char* map_arena(int fd, size_t bytes, int prot) {
    if (bytes == 0) return NULL;
    void* base = mmap(NULL, bytes, prot, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) fail("cannot map a shared buffer", strerror(errno));
    return base;
}
#endif

static void drop_privileges(void) {
#if defined(KL_PYTHON) && !defined(KL_CUDA)
    /* The interpreter may live where only its owner can read (/root/.pyenv): as root, keep the
     * user and drop every capability instead, so only files root owns stay readable. The CPU
     * filters are an allow-list (read-only opens, no metadata changes), which is what makes a
     * capability-less root safe there. The CUDA filters are a deny-list, and the driver as root
     * rewrites /dev/char nodes on every runtime's first call: with CUDA the runner is nobody,
     * before the driver starts, and the trusted side checks nobody can read the interpreter
     * (backends/modelnew_cuda.py). */
    if (geteuid() == 0) {
        struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct none[2];
        memset(none, 0, sizeof none);
        if (syscall(SYS_capset, &head, none) != 0) fail("cannot drop capabilities", strerror(errno));
    }
#else
    if (geteuid() == 0) {
        if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
            fail("cannot drop root", strerror(errno));
    }
#endif
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs", strerror(errno));
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* After the uid change, which clears it: if the trusted side dies without stopping us (a
       killed Ray worker, a lost node), we die too instead of lingering stopped, holding memory.
       It fires when the spawning *thread* exits: a runner lives within the job, on the thread
       that started it (sandbox.Candidate), never handed to another. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
}

static void* nothing(void* arg) { return arg; }

/* glibc installs its cancellation handler when the first thread is made: make one now, before
 * the filters, so that no signal handler is ever installed once candidate code can run. */
static void start_threading(void) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, nothing, NULL) != 0 || pthread_join(thread, NULL) != 0)
        fail("cannot start a thread", NULL);
}

static void close_other_descriptors(void) {
    for (int fd = 3; fd < 1024; fd++)
        if (fd != CMD_FD && fd != REPLY_FD) close(fd);
}

#ifndef KL_CUDA
static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
#endif

/* -- commands ------------------------------------------------------------------------------ */

static int read_line(char* line, size_t size) {
    static char pending[1 << 16];
    static size_t have = 0;
    for (;;) {
        char* end = memchr(pending, '\n', have);
        if (end) {
            size_t n = (size_t)(end - pending);
            if (n + 1 > size) fail("command too long", NULL);
            memcpy(line, pending, n);
            line[n] = '\0';
            have -= n + 1;
            memmove(pending, end + 1, have);
            return 1;
        }
        if (have == sizeof pending) fail("command too long", NULL);
        ssize_t got = read(CMD_FD, pending + have, sizeof pending - have);
        if (got <= 0) return 0;
        have += (size_t)got;
    }
}

static void* arena_pointer(char* base, size_t bytes, const char* text) {
    unsigned long long offset = strtoull(text, NULL, 10);
    if (base == NULL || offset > bytes) fail("offset outside the shared buffers", text);
    return base + offset;
}

static void run_call(launch_fn launch, char* line) {
    char* words[4 + 4 * MAX_ARGS];
    int count = 0;
    for (char* word = strtok(line + 1, " "); word && count < (int)(sizeof words / sizeof words[0]);
         word = strtok(NULL, " "))
        words[count++] = word;
    if (count < 4) fail("bad call command", NULL);
    int nin = atoi(words[0]), nout = atoi(words[1]), naxes = atoi(words[2]), nparams = atoi(words[3]);
    if (nin < 0 || nout < 0 || naxes < 0 || nparams < 0 || nin > MAX_ARGS || nout > MAX_ARGS ||
        naxes > MAX_ARGS || nparams > MAX_ARGS || count != 4 + nin + nout + naxes + nparams)
        fail("bad call command", NULL);
    const void* ins[MAX_ARGS + 1];
    void* outs[MAX_ARGS + 1];
    int64_t axes[MAX_ARGS + 1];
    double params[MAX_ARGS + 1];
    int at = 4;
    for (int i = 0; i < nin; i++) ins[i] = arena_pointer(in_base, in_bytes, words[at++]);
    for (int i = 0; i < nout; i++) outs[i] = arena_pointer(out_base, out_bytes, words[at++]);
    for (int i = 0; i < naxes; i++) axes[i] = strtoll(words[at++], NULL, 10);
    for (int i = 0; i < nparams; i++) params[i] = strtod(words[at++], NULL);
    /* This core's caches were made cold by the trusted side while we were stopped: nothing of
     * ours runs between our continuing and the clock's start but reading the command. */
#ifdef KL_CUDA
    begin_span();
    check_cuda(cudaEventRecord(started, stream), "cudaEventRecord");
    int rc = launch(ins, outs, axes, params, stream);
    check_cuda(cudaEventRecord(finished, stream), "cudaEventRecord");
    /* The whole device, not the stream: work off the harness stream belongs to the call. */
    check_cuda(cudaDeviceSynchronize(), "the kernel failed on the GPU");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, started, finished), "cudaEventElapsedTime");
    int64_t elapsed = (int64_t)((double)ms * 1e6), activity = end_span();
    if (__atomic_load_n(&contexts_made, __ATOMIC_RELAXED)) {
        answer("X context\n");
        return;
    }
    if (activity < 0) {
        answer("X unfinished\n");
        return;
    }
    if (activity > elapsed) elapsed = activity; /* the events' window is the harness stream's */
#else
    int64_t start = now_ns();
    int rc = launch(ins, outs, axes, params, NULL);
    int64_t elapsed = now_ns() - start;
#endif
    char reply[64];
    snprintf(reply, sizeof reply, "R %d %lld\n", rc, (long long)elapsed);
    answer(reply);
}

static void protect(char* line) {
    unsigned long long offset = 0, length = 0;
    int prot = 0;
    if (sscanf(line + 1, "%llu %llu %d", &offset, &length, &prot) != 3 || offset + length > out_bytes)
        fail("bad protect command", NULL);
#ifndef KL_CUDA /* device memory has no guard pages: the trusted side checks canaries */
    if (length && mprotect(out_base + offset, length, prot ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
        fail("mprotect", strerror(errno));
#endif
    answer("K\n");
}

int main(int argc, char** argv) {
    REPLY_FD = argc >= 9 ? atoi(argv[6]) : 2;
    if (argc != 9) fail("usage", "kl_runner KERNEL ENTRY IN_BYTES OUT_BYTES CMD REPLY IN OUT");
    CMD_FD = atoi(argv[5]);
    in_bytes = strtoull(argv[3], NULL, 10);
    out_bytes = strtoull(argv[4], NULL, 10);
#ifdef KL_CUDA
    IN_FD = OUT_FD = -1;
    close_other_descriptors();
    drop_privileges();
    if (strcmp(argv[7], "pipe") == 0) { /* the handles come first on the command pipe, off the
                                          * command line every process of the machine can read */
        static char handles[512];
        if (!read_line(handles, sizeof handles) || strncmp(handles, "H ", 2) != 0)
            fail("expected the arenas' handles on the command pipe", NULL);
        char* out_handle = strchr(handles + 2, ' ');
        if (!out_handle) fail("bad arena handles", NULL);
        *out_handle++ = '\0';
        start_cuda(handles + 2, out_handle);
    } else {
        start_cuda(argv[7], argv[8]);
    }
#else
    IN_FD = atoi(argv[7]);
    OUT_FD = atoi(argv[8]);
    in_base = map_arena(IN_FD, in_bytes, PROT_READ);
    out_base = map_arena(OUT_FD, out_bytes, PROT_READ | PROT_WRITE);
    close_other_descriptors();
    drop_privileges();
#endif
    catch_fatal_signals();
#ifdef KL_PYTHON
    signal(SIGINT, SIG_IGN); /* else Python's signal module installs its handler, under the filter */
#endif
    start_threading();
    filter_for_loading();
    void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!library) fail("cannot load the kernel", dlerror());
    launch_fn launch = (launch_fn)dlsym(library, argv[2]);
    if (!launch) fail("the kernel does not define its entry point", argv[2]);
    filter_for_running();
    char ready[96];
    snprintf(ready, sizeof ready, "READY %p %p\n", (void*)in_base, (void*)out_base);
    answer(ready);
    char line[16384];
    while (read_line(line, sizeof line)) {
        switch (line[0]) {
            case 'C': run_call(launch, line); break;
            case 'P': protect(line); break;
            case 'Q': return 0;
            default: fail("unknown command", line);
        }
    }
    return 0;
}
