/* wait_clone.c — "clone" children (whose exit signal is not SIGCHLD) and
 * the wait options that choose children: __WCLONE only those, the default
 * only the others, __WALL all; the exit signal a child sends (none for 0);
 * an adopted child signals SIGCHLD; __WNOTHREAD only the calling thread's
 * children (a dead thread's go to the rest of its process). */
#define _GNU_SOURCE
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

/* A child process (no shared memory) with exit signal `sig`, exiting 3. */
static pid_t clone_child(int sig) {
    long pid = syscall(SYS_clone, (long)sig, 0L, 0L, 0L, 0L);
    if (pid == 0)
        _exit(3);
    CHECK(pid > 0);
    return (pid_t)pid;
}

static void check_exited(const siginfo_t *si, pid_t pid) {
    CHECK_EQ(si->si_pid, pid);
    CHECK_EQ(si->si_code, CLD_EXITED);
    CHECK_EQ(si->si_status, 3);
}

/* The signal pending for this process among those blocked, within 5 s. */
static int take_signal(siginfo_t *si) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGCHLD);
    struct timespec ts = {5, 0};
    return sigtimedwait(&set, si, &ts);
}

static void clone_children(void) {
    /* Exit signal SIGUSR1: invisible to a default wait, seen by __WCLONE. */
    pid_t pid = clone_child(SIGUSR1);
    siginfo_t si;
    CHECK_OK(take_signal(&si));
    CHECK_EQ(si.si_signo, SIGUSR1);
    check_exited(&si, pid);
    CHECK_ERR(waitpid(pid, NULL, 0), ECHILD);
    CHECK_ERR(waitid(P_PID, pid, &si, WEXITED | WNOHANG), ECHILD);
    CHECK_ERR(waitpid(-1, NULL, WNOHANG), ECHILD);
    memset(&si, 0, sizeof(si));
    CHECK_OK(waitid(P_PID, pid, &si, WEXITED | WNOWAIT | __WCLONE));
    check_exited(&si, pid);
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, __WCLONE), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);

    /* A forked child is not a clone child. */
    pid = fork();
    if (pid == 0)
        _exit(3);
    CHECK_OK(take_signal(&si));
    CHECK_EQ(si.si_signo, SIGCHLD);
    CHECK_ERR(waitpid(pid, NULL, __WCLONE), ECHILD);
    CHECK_ERR(waitid(P_ALL, 0, &si, WEXITED | __WCLONE), ECHILD);
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);

    /* Exit signal 0: no signal, and only __WCLONE or __WALL waits. */
    pid = clone_child(0);
    CHECK_EQ(waitpid(-1, NULL, WNOHANG), -1);
    memset(&si, 0, sizeof(si));
    CHECK_OK(waitid(P_ALL, 0, &si, WEXITED | __WALL));
    check_exited(&si, pid);
    sigset_t pending;
    CHECK_OK(sigpending(&pending));
    CHECK(!sigismember(&pending, SIGUSR1) && !sigismember(&pending, SIGCHLD));
    CHECK_ERR(waitpid(-1, NULL, __WALL), ECHILD);
}

/* A subreaper adopts a clone child, which then signals SIGCHLD and is
 * seen by a default wait. */
static void adopted_clone_child(void) {
    CHECK_OK(prctl(PR_SET_CHILD_SUBREAPER, 1));
    int p[2], q[2];
    CHECK_OK(pipe(p));
    CHECK_OK(pipe(q));
    pid_t mid = fork();
    if (mid == 0) {
        long pid = syscall(SYS_clone, (long)SIGUSR1, 0L, 0L, 0L, 0L);
        if (pid == 0) {
            char c;
            close(q[1]);
            /* Until the parent took the middle process's SIGCHLD (which
             * its own would merge with) and closes q. */
            if (read(q[0], &c, 1) != 0)
                _exit(9);
            _exit(3);
        }
        pid_t child = (pid_t)pid;
        if (write(p[1], &child, sizeof(child)) != sizeof(child))
            _exit(8);
        _exit(0);
    }
    close(p[1]);
    close(q[0]);
    pid_t child;
    CHECK_EQ(read(p[0], &child, sizeof(child)), sizeof(child));
    int st = 0;
    CHECK_EQ(waitpid(mid, &st, 0), mid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    siginfo_t si;
    CHECK_OK(take_signal(&si));
    CHECK_EQ(si.si_pid, mid);
    close(q[1]);
    CHECK_OK(take_signal(&si));
    CHECK_EQ(si.si_signo, SIGCHLD);
    check_exited(&si, child);
    CHECK_EQ(waitpid(child, &st, 0), child);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    close(p[0]);
    CHECK_OK(prctl(PR_SET_CHILD_SUBREAPER, 0));
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pid_t thread_child;
static int stage;

static void set_stage(int s) {
    pthread_mutex_lock(&mu);
    stage = s;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void await_stage(int s) {
    pthread_mutex_lock(&mu);
    while (stage < s)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

/* Forks a child, lets the main thread try, then waits for it itself;
 * forks another and exits, leaving it to the main thread. */
static void *forker(void *arg) {
    (void)arg;
    pid_t pid = fork();
    if (pid == 0)
        _exit(3);
    thread_child = pid;
    set_stage(1);
    await_stage(2);
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, __WNOTHREAD), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    pid = fork();
    if (pid == 0)
        _exit(3);
    thread_child = pid;
    CHECK_EQ(waitid(P_PID, pid, &(siginfo_t){0}, WEXITED | WNOWAIT), 0);
    return NULL;
}

static void wnothread(void) {
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, forker, NULL), 0);
    await_stage(1);
    pid_t pid = thread_child;
    siginfo_t si;
    CHECK_ERR(waitid(P_PID, pid, &si, WEXITED | __WNOTHREAD), ECHILD);
    CHECK_ERR(waitpid(pid, NULL, __WNOTHREAD), ECHILD);
    /* Without __WNOTHREAD any thread's children are ours. */
    memset(&si, 0, sizeof(si));
    CHECK_OK(waitid(P_PID, pid, &si, WEXITED | WNOWAIT));
    check_exited(&si, pid);
    set_stage(2);
    CHECK_EQ(pthread_join(t, NULL), 0);
    pid = thread_child;
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, __WNOTHREAD), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
}

/* A clone child traced by its parent: the tracer's wait sees its stops
 * and reaps it without __WCLONE (Linux's eligible_child for ptrace). */
static void traced_clone_child(void) {
    long pid = syscall(SYS_clone, (long)SIGUSR1, 0L, 0L, 0L, 0L);
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
            _exit(1);
        raise(SIGSTOP);
        _exit(3);
    }
    CHECK(pid > 0);
    int st = 0;
    /* __WALL: until PTRACE_TRACEME it is a clone child like another. */
    CHECK_EQ(waitpid((pid_t)pid, &st, __WALL), pid);
    CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
    CHECK_OK(ptrace(PTRACE_CONT, (pid_t)pid, 0, 0));
    CHECK_EQ(waitpid((pid_t)pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    siginfo_t si;
    CHECK_OK(take_signal(&si));
    CHECK_EQ(si.si_signo, SIGUSR1);
}

int main(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGCHLD);
    CHECK_OK(sigprocmask(SIG_BLOCK, &set, NULL));
    clone_children();
    adopted_clone_child();
    traced_clone_child();
    CHECK_OK(sigprocmask(SIG_UNBLOCK, &set, NULL));
    wnothread();
    return 0;
}
