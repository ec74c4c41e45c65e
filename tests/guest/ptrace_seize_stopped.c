/* ptrace_seize_stopped.c — a tracer taking hold of a process that is
 * stopped by job control, as strace starts a program: the child stops
 * itself with SIGSTOP, the parent waits for the stop, seizes and
 * interrupts it, and sends SIGCONT. Linux then reports (ptrace(2),
 * "Attaching and detaching", "Group-stop"):
 *  - the seized stopped process re-traps at once into a ptrace group-stop
 *    (PTRACE_EVENT_STOP with SIGSTOP), without waiting for SIGCONT;
 *  - after PTRACE_LISTEN, a SIGCONT makes it trap again (PTRACE_EVENT_STOP
 *    with SIGTRAP) and then stop for the SIGCONT's delivery: a tracer
 *    sees every signal, even one its tracee ignores;
 *  - resumed with PTRACE_SYSCALL from those stops, the execve it makes
 *    next stops at its entry before PTRACE_EVENT_EXEC (strace prints the
 *    execve there; without that stop it reports a "stray" exec event and
 *    hides everything after). x86-64 only. */
#include "check.h"
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>

#define EVENT(st) ((unsigned)(st) >> 16)

static int is_stop_signal(int sig) {
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static pid_t stopped_child(void (*then)(const char *), const char *arg) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        kill(getpid(), SIGSTOP);
        then(arg);
        _exit(99);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, WSTOPPED), pid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
    return pid;
}

static void exec_self(const char *self) {
    execl(self, self, "exit7", (char *)NULL);
}

static void exit_5(const char *unused) {
    (void)unused;
    _exit(5);
}

/* strace's start-up, event by event. */
static void strace_startup(const char *self) {
    pid_t pid = stopped_child(exec_self, self);
    long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC;
    CHECK_EQ(ptrace(PTRACE_SEIZE, pid, 0, opts), 0);
    CHECK_EQ(ptrace(PTRACE_INTERRUPT, pid, 0, 0), 0);
    CHECK_EQ(kill(pid, SIGCONT), 0);
    int in_syscall = 0, saw_cont = 0, saw_exec_entry = 0, saw_exec_event = 0;
    for (int events = 0;; events++) {
        if (events > 10000)
            FAILF("no exit after %d stops", events);
        int st;
        CHECK_EQ(waitpid(pid, &st, __WALL), pid);
        if (WIFEXITED(st)) {
            CHECK_EQ(WEXITSTATUS(st), 7);
            break;
        }
        CHECK(WIFSTOPPED(st));
        int sig = WSTOPSIG(st), restart = 0;
        long how = PTRACE_SYSCALL;
        if (EVENT(st) == PTRACE_EVENT_STOP) {
            if (is_stop_signal(sig))
                how = PTRACE_LISTEN;
        } else if (EVENT(st) == PTRACE_EVENT_EXEC) {
            if (!in_syscall)
                FAILF("PTRACE_EVENT_EXEC outside a system call (entry stop %d)", saw_exec_entry);
            saw_exec_event = 1;
        } else if (sig == (SIGTRAP | 0x80)) {
            in_syscall = !in_syscall;
            if (in_syscall) {
                struct user_regs_struct r;
                CHECK_EQ(ptrace(PTRACE_GETREGS, pid, 0, &r), 0);
                if (r.orig_rax == SYS_execve)
                    saw_exec_entry = 1;
            }
        } else {
            saw_cont |= sig == SIGCONT;
            restart = sig;
        }
        CHECK_EQ(ptrace(how, pid, 0, restart), 0);
    }
    CHECK(saw_cont);
    CHECK(saw_exec_entry);
    CHECK(saw_exec_event);
}

/* The stops of a seized, stopped process, one by one. */
static void seize_listen_continue(void) {
    pid_t pid = stopped_child(exit_5, NULL);
    CHECK_EQ(ptrace(PTRACE_SEIZE, pid, 0, 0), 0);
    int st;
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP && EVENT(st) == PTRACE_EVENT_STOP);
    CHECK_EQ(ptrace(PTRACE_LISTEN, pid, 0, 0), 0);
    CHECK_EQ(waitpid(pid, &st, __WALL | WNOHANG), 0);
    CHECK_EQ(kill(pid, SIGCONT), 0);
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && EVENT(st) == PTRACE_EVENT_STOP);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGCONT && EVENT(st) == 0);
    CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5);
}

/* A signal the tracee ignores (by default or SIG_IGN) still stops it for
 * its tracer. */
static void ignored_signals_stop(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        signal(SIGUSR1, SIG_IGN);
        trace_me_and_stop();
        for (;;)
            pause();
    }
    CHECK_EQ(WSTOPSIG(wait_stop(pid)), SIGSTOP);
    int sigs[] = {SIGCONT, SIGWINCH, SIGUSR1};
    for (unsigned i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        CHECK_EQ(ptrace(PTRACE_CONT, pid, 0, 0), 0);
        CHECK_EQ(kill(pid, sigs[i]), 0);
        CHECK_EQ(WSTOPSIG(wait_stop(pid)), sigs[i]);
    }
    CHECK_EQ(kill(pid, SIGKILL), 0);
    int st;
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exit7") == 0)
        return 7;
    ignored_signals_stop();
    seize_listen_continue();
    strace_startup(argv[0]);
    puts("ptrace_seize_stopped ok");
    return 0;
}
