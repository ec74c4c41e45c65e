/* ptrace.c — one process tracing another, as strace and gdb do: the
 * TRACEME exec stop, PTRACE_SYSCALL stops read with GETREGS, a result
 * changed with SETREGS and a call skipped through orig_rax, PEEKDATA and
 * POKEDATA (on read-only data too, as FOLL_FORCE), the fork event with the
 * child traced from its first instruction, SEIZE and INTERRUPT, EXITKILL,
 * and the refusals (EPERM, ESRCH). */
#include "check.h"
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

static volatile long value = 0x1111;
static const volatile long ro_value = 5;

/* Waits for `pid` to exit with `code`, passing on the signals a tracee
 * stops with on the way (SIGCHLD from its own child). */
static void wait_exit(pid_t pid, int code) {
    int st;
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    while (WIFSTOPPED(st)) {
        CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st)), 0);
        CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != code)
        FAILF("pid %d: status %#x, want exit %d", pid, st, code);
}

/* A child that asks to be traced and stops itself. */
static pid_t traced_child(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        trace_me_and_stop();
    }
    return pid;
}

static void exec_stop(const char *self) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
            _exit(90);
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != -1 || errno != EPERM)
            _exit(91);
        execl(self, self, "exit7", (char *)NULL);
        _exit(92);
    }
    int st = wait_stop(pid);
    CHECK_EQ(WSTOPSIG(st), SIGTRAP);
    CHECK_EQ(st >> 16, 0);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    wait_exit(pid, 7);
}

static void syscall_stops(void) {
    pid_t pid = traced_child();
    if (pid == 0) {
        long ppid = syscall(SYS_getppid);
        errno = 0;
        long skipped = syscall(SYS_getuid);
        int skip_ok = skipped == -1 && errno == ENOSYS;
        syscall(SYS_getpid);
        _exit(ppid == 12345 && skip_ok ? 0 : 1);
    }
    CHECK_EQ(WSTOPSIG(wait_stop(pid)), SIGSTOP);
    CHECK_EQ(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD), 0);
    CHECK_EQ(ptrace(PTRACE_SYSCALL, pid, 0, 0), 0);
    long calls[64];
    int n = 0, entering = 1, seen_getppid = 0;
    for (;;) {
        int st;
        CHECK_EQ(waitpid(pid, &st, __WALL), pid);
        if (WIFEXITED(st)) {
            CHECK_EQ(WEXITSTATUS(st), 0);
            break;
        }
        CHECK(WIFSTOPPED(st));
        CHECK_EQ(WSTOPSIG(st), SIGTRAP | 0x80);
        struct user_regs_struct r;
        CHECK_EQ(ptrace(PTRACE_GETREGS, pid, 0, &r), 0);
        if (entering) {
            CHECK((long)r.rax == -ENOSYS);
            if (n < 64)
                calls[n++] = (long)r.orig_rax;
            if (r.orig_rax == SYS_getuid) {
                r.orig_rax = -1;
                CHECK_EQ(ptrace(PTRACE_SETREGS, pid, 0, &r), 0);
            }
        } else if (r.orig_rax == SYS_getppid) {
            CHECK_EQ(r.rax, getpid());
            seen_getppid = 1;
            r.rax = 12345;
            CHECK_EQ(ptrace(PTRACE_SETREGS, pid, 0, &r), 0);
        }
        entering = !entering;
        CHECK_EQ(ptrace(PTRACE_SYSCALL, pid, 0, 0), 0);
    }
    CHECK(seen_getppid);
    /* getppid, then the skipped getuid (its number reads -1 at exit), then
     * getpid, then exit_group. */
    int at = -1;
    for (int i = 0; i < n; i++)
        if (calls[i] == SYS_getppid)
            at = i;
    CHECK(at >= 0 && at + 3 < n + 1);
    CHECK_EQ(calls[at + 1], SYS_getuid);
    CHECK_EQ(calls[at + 2], SYS_getpid);
    CHECK_EQ(calls[n - 1], SYS_exit_group);
}

static void peek_poke(void) {
    pid_t pid = traced_child();
    if (pid == 0)
        _exit(value == 0x2222 && ro_value == 6 ? 0 : 1);
    wait_stop(pid);
    errno = 0;
    CHECK_EQ(ptrace(PTRACE_PEEKDATA, pid, &value, 0), 0x1111);
    CHECK_EQ(errno, 0);
    CHECK_EQ(ptrace(PTRACE_POKEDATA, pid, &value, 0x2222), 0);
    CHECK_EQ(ptrace(PTRACE_PEEKDATA, pid, &value, 0), 0x2222);
    /* Read-only data is written through a private copy. */
    CHECK_EQ(ptrace(PTRACE_POKETEXT, pid, (void *)&ro_value, 6), 0);
    CHECK_EQ(ptrace(PTRACE_PEEKTEXT, pid, (void *)&ro_value, 0), 6);
    CHECK_EQ(value, 0x1111);
    CHECK_EQ(ro_value, 5);
    /* Unmapped memory: EIO. */
    errno = 0;
    CHECK_EQ(ptrace(PTRACE_PEEKDATA, pid, (void *)8, 0), -1);
    CHECK_EQ(errno, EIO);
    /* The user area: rip, and a debug register reading 0. */
    struct user_regs_struct r;
    CHECK_EQ(ptrace(PTRACE_GETREGS, pid, 0, &r), 0);
    CHECK_EQ(ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user_regs_struct, rip), 0), (long)r.rip);
    CHECK_EQ(r.cs, 0x33);
    CHECK_EQ(ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user, u_debugreg[7]), 0), 0);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    wait_exit(pid, 0);
}

static void fork_event(void) {
    pid_t pid = traced_child();
    if (pid == 0) {
        pid_t g = fork();
        if (g == 0)
            _exit(3);
        int st;
        _exit(waitpid(g, &st, 0) == g && WIFEXITED(st) && WEXITSTATUS(st) == 3 ? 0 : 1);
    }
    wait_stop(pid);
    CHECK_EQ(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEFORK), 0);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    int st = wait_stop(pid);
    CHECK_EQ(st >> 8, SIGTRAP | (PTRACE_EVENT_FORK << 8));
    unsigned long g = 0;
    CHECK_EQ(ptrace(PTRACE_GETEVENTMSG, pid, 0, &g), 0);
    CHECK(g > 0);
    /* The new child is traced, stopped by SIGSTOP before it ran. */
    st = wait_stop((pid_t)g);
    CHECK_EQ(WSTOPSIG(st), SIGSTOP);
    CHECK_EQ(ptrace(PTRACE_CONT, (pid_t)g, 0, 0), 0);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    /* Its exit is reported to the tracer too. */
    wait_exit((pid_t)g, 3);
    wait_exit(pid, 0);
}

static void seize_interrupt(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        for (;;)
            pause();
    }
    CHECK_EQ(ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_EXITKILL), 0);
    /* Seized, not stopped: commands that need a stop fail. */
    errno = 0;
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), -1);
    CHECK_EQ(errno, ESRCH);
    CHECK_EQ(ptrace(PTRACE_INTERRUPT, pid, 0, 0), 0);
    int st = wait_stop(pid);
    CHECK_EQ(st >> 16, PTRACE_EVENT_STOP);
    CHECK_EQ(WSTOPSIG(st), SIGTRAP);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    /* A signal is a signal-delivery-stop: suppressed by the tracer. */
    CHECK_EQ(kill(pid, SIGUSR1), 0);
    st = wait_stop(pid);
    CHECK_EQ(WSTOPSIG(st), SIGUSR1);
    siginfo_t si;
    CHECK_EQ(ptrace(PTRACE_GETSIGINFO, pid, 0, &si), 0);
    CHECK_EQ(si.si_signo, SIGUSR1);
    CHECK_EQ(si.si_pid, getpid());
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    /* SIGKILL wins. */
    CHECK_EQ(kill(pid, SIGKILL), 0);
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static void exitkill(void) {
    int fds[2];
    CHECK_OK(pipe(fds));
    pid_t tracer = CHECK_OK(fork());
    if (tracer == 0) {
        pid_t g = fork();
        if (g == 0) {
            for (;;)
                pause();
        }
        if (ptrace(PTRACE_SEIZE, g, 0, PTRACE_O_EXITKILL) != 0)
            _exit(1);
        if (write(fds[1], &g, sizeof g) != sizeof g)
            _exit(2);
        _exit(0);
    }
    close(fds[1]);
    pid_t g;
    CHECK_EQ(read(fds[0], &g, sizeof g), sizeof g);
    wait_exit(tracer, 0);
    /* The tracer's exit killed its tracee, now our child (subreaper). */
    int st;
    CHECK_EQ(waitpid(g, &st, 0), g);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    close(fds[0]);
}

static void refusals(void) {
    errno = 0;
    CHECK_EQ(ptrace(PTRACE_ATTACH, getpid(), 0, 0), -1);
    CHECK_EQ(errno, EPERM);
    errno = 0;
    CHECK_EQ(ptrace(PTRACE_CONT, getpid(), 0, 0), -1);
    CHECK_EQ(errno, ESRCH);
    if (geteuid() != 0)
        return;
    /* Another user cannot trace a root process. */
    pid_t victim = CHECK_OK(fork());
    if (victim == 0) {
        for (;;)
            pause();
    }
    pid_t other = CHECK_OK(fork());
    if (other == 0) {
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
            _exit(2);
        _exit(ptrace(PTRACE_ATTACH, victim, 0, 0) == -1 && errno == EPERM ? 0 : 1);
    }
    wait_exit(other, 0);
    CHECK_EQ(kill(victim, SIGKILL), 0);
    CHECK_EQ(waitpid(victim, NULL, 0), victim);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exit7") == 0)
        return 7;
    CHECK_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    exec_stop(argv[0]);
    syscall_stops();
    peek_poke();
    fork_event();
    seize_interrupt();
    exitkill();
    refusals();
    puts("ptrace ok");
    return 0;
}
