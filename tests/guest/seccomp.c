/* seccomp.c — guest seccomp as Linux's seccomp(2): filter checks (EINVAL,
 * EFAULT, EACCES), every action (ERRNO, TRAP with its SIGSYS siginfo,
 * TRACE without a tracer, LOG, KILL_THREAD, KILL_PROCESS), stacking and
 * precedence, inheritance across fork and exec, TSYNC (and the tid of the
 * thread in its way), strict mode, PR_GET_SECCOMP and /proc/self/status.
 * Each case that installs a filter runs in a child of its own. */
#include "check.h"

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>

#define NR_OFF offsetof(struct seccomp_data, nr)
#define ARG0_OFF offsetof(struct seccomp_data, args[0])

static long sc(unsigned op, unsigned flags, void *args) {
    return syscall(SYS_seccomp, op, flags, args);
}

static long install(struct sock_filter *f, unsigned short n, unsigned flags) {
    struct sock_fprog p = {.len = n, .filter = f};
    return sc(SECCOMP_SET_MODE_FILTER, flags, &p);
}

/* A filter: system call `nr` gets `verdict`, every other one is allowed. */
static long on_nr(long nr, unsigned verdict, unsigned flags) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, verdict),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    return install(f, 4, flags);
}

/* Runs `fn` in a child and returns its wait status. */
static int in_child(void (*fn)(void)) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
        fn();
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    return st;
}

static void must_exit_0(void (*fn)(void), const char *what) {
    int st = in_child(fn);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAILF("%s: child status %#x", what, st);
}

static void must_die_of(void (*fn)(void), int sig, const char *what) {
    int st = in_child(fn);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != sig)
        FAILF("%s: child status %#x, want death by signal %d", what, st, sig);
}

static void checks(void) {
    struct sock_filter ret_allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    CHECK_ERR(install(ret_allow, 0, 0), EINVAL);
    static struct sock_filter big[BPF_MAXINSNS + 1];
    for (int i = 0; i <= BPF_MAXINSNS; i++)
        big[i] = ret_allow[0];
    CHECK_ERR(install(big, BPF_MAXINSNS + 1, 0), EINVAL);
    struct sock_filter byte_load[] = {BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0), ret_allow[0]};
    CHECK_ERR(install(byte_load, 2, 0), EINVAL);
    struct sock_filter past_data[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 64), ret_allow[0]};
    CHECK_ERR(install(past_data, 2, 0), EINVAL);
    struct sock_filter unaligned[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 2), ret_allow[0]};
    CHECK_ERR(install(unaligned, 2, 0), EINVAL);
    struct sock_filter far_jump[] = {BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), ret_allow[0]};
    CHECK_ERR(install(far_jump, 2, 0), EINVAL);
    struct sock_filter back_jump[] = {ret_allow[0], BPF_STMT(BPF_JMP | BPF_JA, 0xffffffff), ret_allow[0]};
    CHECK_ERR(install(back_jump, 3, 0), EINVAL);
    struct sock_filter no_ret[] = {BPF_STMT(BPF_LD | BPF_IMM, 0)};
    CHECK_ERR(install(no_ret, 1, 0), EINVAL);
    struct sock_filter div0[] = {BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0), ret_allow[0]};
    CHECK_ERR(install(div0, 2, 0), EINVAL);
    struct sock_filter unset_mem[] = {BPF_STMT(BPF_LD | BPF_MEM, 3), ret_allow[0]};
    CHECK_ERR(install(unset_mem, 2, 0), EINVAL);
    CHECK_ERR(sc(SECCOMP_SET_MODE_FILTER, 0, (void *)8), EFAULT);
    struct sock_fprog bad_ptr = {.len = 1, .filter = (struct sock_filter *)8};
    CHECK_ERR(sc(SECCOMP_SET_MODE_FILTER, 0, &bad_ptr), EFAULT);
    CHECK_ERR(install(ret_allow, 1, 1u << 30), EINVAL);
    CHECK_ERR(sc(SECCOMP_SET_MODE_STRICT, 1, NULL), EINVAL);
    CHECK_ERR(sc(SECCOMP_SET_MODE_STRICT, 0, ret_allow), EINVAL);
    CHECK_ERR(sc(99, 0, NULL), EINVAL);
    CHECK_ERR(prctl(PR_SET_SECCOMP, 7, 0, 0, 0), EINVAL);

    unsigned action = SECCOMP_RET_KILL_PROCESS;
    CHECK_EQ(sc(SECCOMP_GET_ACTION_AVAIL, 0, &action), 0);
    action = SECCOMP_RET_ERRNO;
    CHECK_EQ(sc(SECCOMP_GET_ACTION_AVAIL, 0, &action), 0);
    action = SECCOMP_RET_LOG;
    CHECK_EQ(sc(SECCOMP_GET_ACTION_AVAIL, 0, &action), 0);
    action = 0x12340000;
    CHECK_ERR(sc(SECCOMP_GET_ACTION_AVAIL, 0, &action), EOPNOTSUPP);
    CHECK_ERR(sc(SECCOMP_GET_ACTION_AVAIL, 1, &action), EINVAL);
    CHECK_ERR(sc(SECCOMP_GET_ACTION_AVAIL, 0, (void *)8), EFAULT);
    struct seccomp_notif_sizes sizes;
    CHECK_EQ(sc(SECCOMP_GET_NOTIF_SIZES, 0, &sizes), 0);
    CHECK_EQ(sizes.seccomp_data, sizeof(struct seccomp_data));
    CHECK_EQ(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0);
}

/* Without no_new_privs and without CAP_SYS_ADMIN: EACCES. */
static void no_privs(void) {
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    CHECK_OK(syscall(SYS_capget, &h, d));
    d[0].effective &= ~(1u << CAP_SYS_ADMIN);
    CHECK_OK(syscall(SYS_capset, &h, d));
    CHECK_ERR(on_nr(SYS_getppid, SECCOMP_RET_ERRNO | 1, 0), EACCES);
}

static int has_status_line(const char *want) {
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strcmp(line, want) == 0)
            found = 1;
    fclose(f);
    return found;
}

static void errno_then_allow(void) {
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_ERRNO | 77, 0), 0);
    CHECK_ERR(syscall(SYS_getppid), 77);
    CHECK(syscall(SYS_getpid) > 0);
    CHECK_EQ(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 2);
    CHECK(has_status_line("Seccomp:\t2\n"));
    CHECK(has_status_line("Seccomp_filters:\t1\n"));
    /* A filter on an argument: dup(12345) gets ENOTTY, other dups run. */
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_dup, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 12345, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTTY),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    CHECK_EQ(install(f, 6, 0), 0);
    CHECK_ERR(dup(12345), ENOTTY);
    CHECK_ERR(dup(12346), EBADF);
    CHECK(has_status_line("Seccomp_filters:\t2\n"));
    /* Stacked on a tie, the newest filter's data is returned. */
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_ERRNO | 5, 0), 0);
    CHECK_ERR(syscall(SYS_getppid), 5);
    /* ERRNO data is capped at 4095. */
    CHECK_EQ(on_nr(SYS_getuid, SECCOMP_RET_ERRNO | 0xffff, 0), 0);
    CHECK_EQ(syscall(SYS_getuid), -1);
    CHECK_EQ(errno, 4095);
    /* Strict mode is refused once filters are on. */
    CHECK_ERR(sc(SECCOMP_SET_MODE_STRICT, 0, NULL), EINVAL);
}

static volatile int trapped_nr, trapped_errno, trapped_code, trapped_rax;
static volatile unsigned trapped_arch;
static volatile void *trapped_addr;

static void on_sigsys(int sig, siginfo_t *si, void *uc_) {
    ucontext_t *uc = uc_;
    (void)sig;
    trapped_nr = si->si_syscall;
    trapped_errno = si->si_errno;
    trapped_code = si->si_code;
    trapped_arch = si->si_arch;
    trapped_addr = si->si_call_addr;
    trapped_rax = uc->uc_mcontext.gregs[REG_RAX];
    /* The handler emulates the call: its result is what rax holds. */
    uc->uc_mcontext.gregs[REG_RAX] = 4242;
}

static void trap(void) {
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    CHECK_OK(sigaction(SIGSYS, &sa, NULL));
    /* TRAP outranks ERRNO whatever the order of the filters. */
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_TRAP | 9, 0), 0);
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_ERRNO | 1, 0), 0);
    CHECK_EQ(syscall(SYS_getppid), 4242);
    CHECK_EQ(trapped_nr, SYS_getppid);
    CHECK_EQ(trapped_errno, 9);
    CHECK_EQ(trapped_code, 1); /* SYS_SECCOMP */
    CHECK_EQ(trapped_arch, AUDIT_ARCH_X86_64);
    CHECK_EQ(trapped_rax, SYS_getppid);
    CHECK(trapped_addr != NULL);
}

static void trap_blocked(void) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGSYS);
    CHECK_OK(sigprocmask(SIG_BLOCK, &s, NULL));
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_TRAP, 0), 0);
    syscall(SYS_getppid);
    FAILF("a blocked SIGSYS did not kill");
}

static void trace_log(void) {
    pid_t parent = getppid();
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_LOG, SECCOMP_FILTER_FLAG_LOG), 0);
    CHECK_EQ(syscall(SYS_getppid), parent);
    CHECK_EQ(on_nr(SYS_getuid, SECCOMP_RET_TRACE | 3, 0), 0);
    CHECK_ERR(syscall(SYS_getuid), ENOSYS);
}

static void kill_process(void) {
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_KILL_PROCESS, 0), 0);
    syscall(SYS_getppid);
    FAILF("KILL_PROCESS returned");
}

static void kill_thread_alone(void) {
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_KILL_THREAD, 0), 0);
    syscall(SYS_getppid);
    FAILF("KILL_THREAD returned");
}

static void *call_getppid(void *arg) {
    syscall(SYS_getppid);
    return arg;
}

/* KILL_THREAD in one of two threads: the other goes on. */
static void kill_thread(void) {
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_KILL_THREAD, 0), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, call_getppid, (void *)1), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

/* A runtime division by a zero X ends the program with 0: KILL_THREAD. */
static void divide_by_zero(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 3),
        BPF_STMT(BPF_LDX | BPF_IMM, 0),
        BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    CHECK_EQ(install(f, 6, 0), 0);
    syscall(SYS_getppid);
    FAILF("the program did not stop at the division");
}

static const char *self_path;

static void inherited(void) {
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_ERRNO | 66, 0), 0);
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        if (syscall(SYS_getppid) != -1 || errno != 66)
            _exit(3);
        execl(self_path, self_path, "exec-check", (char *)NULL);
        _exit(4);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK_EQ(st, 0);
}

static int exec_check(void) {
    CHECK_EQ(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 2);
    CHECK_ERR(syscall(SYS_getppid), 66);
    return 0;
}

static int go[2], done[2];

static void *wait_then_getppid(void *arg) {
    char c;
    CHECK_EQ(read(go[0], &c, 1), 1);
    errno = 0;
    long r = syscall(SYS_getppid);
    int e = r == -1 ? errno : 0;
    CHECK_EQ(write(done[1], &e, sizeof e), sizeof e);
    return arg;
}

static void tsync(void) {
    CHECK_OK(pipe(go));
    CHECK_OK(pipe(done));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, wait_then_getppid, NULL), 0);
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_ERRNO | 55, SECCOMP_FILTER_FLAG_TSYNC), 0);
    CHECK_EQ(write(go[1], "x", 1), 1);
    int e = 0;
    CHECK_EQ(read(done[0], &e, sizeof e), sizeof e);
    CHECK_EQ(e, 55);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

static volatile pid_t own_tid;

static void *own_filter_then_wait(void *arg) {
    CHECK_EQ(on_nr(SYS_getuid, SECCOMP_RET_ERRNO | 1, 0), 0);
    own_tid = syscall(SYS_gettid);
    char c;
    CHECK_EQ(read(go[0], &c, 1), 1);
    return arg;
}

/* A thread with a filter of its own is in TSYNC's way: its tid. */
static void tsync_refused(void) {
    CHECK_OK(pipe(go));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, own_filter_then_wait, NULL), 0);
    while (own_tid == 0)
        usleep(1000);
    CHECK_EQ(on_nr(SYS_getppid, SECCOMP_RET_ERRNO | 1, SECCOMP_FILTER_FLAG_TSYNC), own_tid);
    CHECK_ERR(on_nr(SYS_getppid, SECCOMP_RET_ERRNO | 1, SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH),
              ESRCH);
    /* Not attached: the caller's getppid still runs. */
    CHECK(syscall(SYS_getppid) > 0);
    CHECK_EQ(write(go[1], "x", 1), 1);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

static void strict(void) {
    CHECK_EQ(prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0), 0);
    /* read and write still work, then anything else kills. */
    static const char msg[] = "";
    syscall(SYS_write, 1, msg, 0);
    syscall(SYS_getppid);
    syscall(SYS_exit, 9);
}

static void strict_exit(void) {
    CHECK_EQ(sc(SECCOMP_SET_MODE_STRICT, 0, NULL), 0);
    syscall(SYS_exit, 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exec-check") == 0)
        return exec_check();
    self_path = "/proc/self/exe";
    (void)argv;
    must_exit_0(checks, "filter checks");
    if (geteuid() == 0) {
        pid_t pid = CHECK_OK(fork());
        if (pid == 0) {
            no_privs();
            _exit(0);
        }
        int st;
        CHECK_EQ(waitpid(pid, &st, 0), pid);
        CHECK_EQ(st, 0);
    }
    must_exit_0(errno_then_allow, "ERRNO");
    must_exit_0(trap, "TRAP");
    must_die_of(trap_blocked, SIGSYS, "TRAP with SIGSYS blocked");
    must_exit_0(trace_log, "TRACE and LOG");
    must_die_of(kill_process, SIGSYS, "KILL_PROCESS");
    must_die_of(kill_thread_alone, SIGSYS, "KILL_THREAD of the only thread");
    must_exit_0(kill_thread, "KILL_THREAD of one thread");
    must_die_of(divide_by_zero, SIGSYS, "division by zero");
    must_exit_0(inherited, "inheritance across fork and exec");
    must_exit_0(tsync, "TSYNC");
    must_exit_0(tsync_refused, "TSYNC refused");
    must_die_of(strict, SIGKILL, "strict mode");
    must_exit_0(strict_exit, "strict mode exit");
    /* The parent itself never installed anything. */
    CHECK_EQ(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0);
    return 0;
}
