/* pidfd.c — process descriptors: pidfd_open (flags, errors, close-on-exec,
 * PIDFD_NONBLOCK), poll readiness when the process exits, a signal through
 * pidfd_send_signal (with and without a siginfo), waitid(P_PIDFD) with its
 * EAGAIN on a non-blocking pidfd, ESRCH once the process is gone, and
 * pidfd_getfd's copy of another process's descriptor; clone and clone3
 * with CLONE_PIDFD, and clone3's checks of its versioned struct; a
 * /proc/[pid] directory as pidfd_send_signal's pidfd; a zombie's pidfd
 * (readable, signalled to no effect; hung up once reaped); PIDFD_THREAD
 * pidfds of one thread and the signal scopes. */
#include "check.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <stdint.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK O_NONBLOCK
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif
#ifndef PIDFD_SIGNAL_THREAD
#define PIDFD_SIGNAL_THREAD 1
#define PIDFD_SIGNAL_THREAD_GROUP 2
#endif

static int pidfd_open(pid_t pid, unsigned flags) { return syscall(SYS_pidfd_open, pid, flags); }
static int pidfd_send_signal(int fd, int sig, siginfo_t *info, unsigned flags) {
    return syscall(SYS_pidfd_send_signal, fd, sig, info, flags);
}
static int pidfd_getfd(int fd, int target, unsigned flags) { return syscall(SYS_pidfd_getfd, fd, target, flags); }

static int readable(int fd, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = CHECK_OK(poll(&p, 1, timeout_ms));
    return n == 1 && (p.revents & POLLIN);
}

/* Whether /proc/self/fdinfo/FD has the line "KEY\tVALUE". */
static int fdinfo_has(int fd, const char *key, long value) {
    char path[64], line[128], want[128];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    snprintf(want, sizeof want, "%s\t%ld\n", key, value);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strcmp(line, want) == 0)
            found = 1;
    fclose(f);
    return found;
}

/* A child that waits for a byte on `in`, then exits with that byte. */
static pid_t child(int in[2], int keep) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        close(in[1]);
        (void)keep;
        unsigned char c = 0;
        if (read(in[0], &c, 1) != 1)
            _exit(99);
        _exit(c);
    }
    return pid;
}

static int thread_pipe[2];
static volatile pid_t thread_tid;

static void *blocked_thread(void *arg) {
    (void)arg;
    char b;
    thread_tid = (pid_t)syscall(SYS_gettid);
    if (read(thread_pipe[0], &b, 1) < 0)
        return NULL;
    return NULL;
}

/* PIDFD_THREAD: a pidfd of one thread, readable as soon as that thread
 * exits (the process lives on), which signals its thread; a non-leader's
 * tid without it is ENOENT (Linux 6.15). A leader's is readable only
 * when the whole process exited. */
static void thread_pidfds(void) {
    CHECK_OK(pipe(thread_pipe));
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, blocked_thread, NULL), 0);
    while (thread_tid == 0)
        sched_yield();
    CHECK_ERR(pidfd_open(thread_tid, 0), ENOENT);
    int tfd = CHECK_OK(pidfd_open(thread_tid, PIDFD_THREAD));
    int lfd = CHECK_OK(pidfd_open(getpid(), PIDFD_THREAD));
    CHECK(!readable(tfd, 0));
    CHECK_OK(pidfd_send_signal(tfd, 0, NULL, 0));
    CHECK_OK(pidfd_send_signal(tfd, 0, NULL, PIDFD_SIGNAL_THREAD));
    CHECK_OK(pidfd_send_signal(tfd, 0, NULL, PIDFD_SIGNAL_THREAD_GROUP));
    CHECK_ERR(pidfd_send_signal(tfd, 0, NULL, PIDFD_SIGNAL_THREAD | PIDFD_SIGNAL_THREAD_GROUP), EINVAL);
    CHECK_OK(close(thread_pipe[1]));
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK(readable(tfd, 1000));
    CHECK_ERR(pidfd_send_signal(tfd, 0, NULL, 0), ESRCH);
    CHECK(!readable(lfd, 0));
    close(tfd);
    close(lfd);
    close(thread_pipe[0]);
}

int main(void) {
    CHECK_ERR(pidfd_open(getpid(), 1), EINVAL);
    CHECK_ERR(pidfd_open(0, 0), EINVAL);
    CHECK_ERR(pidfd_open(-1, 0), EINVAL);
    CHECK_ERR(pidfd_open(4000000, 0), ESRCH);
    CHECK_ERR(pidfd_send_signal(0, SIGTERM, NULL, 0), EBADF);

    int self = CHECK_OK(pidfd_open(getpid(), 0));
    CHECK_EQ(fcntl(self, F_GETFD), FD_CLOEXEC);
    CHECK(fdinfo_has(self, "Pid:", getpid()));
    CHECK_EQ(readable(self, 0), 0);
    CHECK_EQ(pidfd_send_signal(self, 0, NULL, 0), 0);
    CHECK_ERR(pidfd_send_signal(self, 0, NULL, 0x100), EINVAL);
    CHECK_ERR(pidfd_send_signal(self, 99, NULL, 0), EINVAL);

    /* Exit seen through poll, then reaped through waitid(P_PIDFD). */
    int p[2];
    CHECK_OK(pipe(p));
    pid_t c = child(p, 0);
    int fd = CHECK_OK(pidfd_open(c, 0));
    int nb = CHECK_OK(pidfd_open(c, PIDFD_NONBLOCK));
    CHECK(fcntl(nb, F_GETFL) & O_NONBLOCK);
    CHECK_EQ(readable(fd, 0), 0);
    siginfo_t si;
    CHECK_ERR(waitid(P_PIDFD, nb, &si, WEXITED), EAGAIN);
    memset(&si, 0, sizeof si);
    CHECK_EQ(waitid(P_PIDFD, fd, &si, WEXITED | WNOHANG), 0);
    CHECK_EQ(si.si_pid, 0);
    CHECK_EQ(write(p[1], "\x07", 1), 1);
    CHECK_EQ(readable(fd, 10000), 1);
    CHECK_EQ(readable(nb, 0), 1);
    CHECK(fdinfo_has(fd, "Pid:", c));
    CHECK_EQ(waitid(P_PIDFD, fd, &si, WEXITED), 0);
    CHECK_EQ(si.si_pid, c);
    CHECK_EQ(si.si_code, CLD_EXITED);
    CHECK_EQ(si.si_status, 7);
    CHECK(fdinfo_has(fd, "Pid:", -1));
    CHECK_ERR(pidfd_send_signal(fd, SIGTERM, NULL, 0), ESRCH);
    CHECK_ERR(waitid(P_PIDFD, fd, &si, WEXITED), ECHILD);
    CHECK_ERR(waitid(P_PIDFD, p[0], &si, WEXITED), EBADF);
    close(fd);
    close(nb);
    close(p[0]);
    close(p[1]);

    /* A signal through the pidfd kills the child. */
    CHECK_OK(pipe(p));
    c = child(p, 0);
    fd = CHECK_OK(pidfd_open(c, 0));
    CHECK_EQ(pidfd_send_signal(fd, SIGTERM, NULL, 0), 0);
    CHECK_EQ(readable(fd, 10000), 1);
    CHECK_EQ(waitid(P_PIDFD, fd, &si, WEXITED), 0);
    CHECK_EQ(si.si_code, CLD_KILLED);
    CHECK_EQ(si.si_status, SIGTERM);
    close(fd);
    close(p[0]);
    close(p[1]);

    /* A siginfo claiming to be kill(2)'s is only for oneself; SI_QUEUE
     * goes through, and a mismatched signal number is EINVAL. */
    CHECK_OK(pipe(p));
    c = child(p, 0);
    fd = CHECK_OK(pidfd_open(c, 0));
    memset(&si, 0, sizeof si);
    si.si_signo = SIGUSR1;
    si.si_code = SI_USER;
    CHECK_ERR(pidfd_send_signal(fd, SIGUSR1, &si, 0), EPERM);
    CHECK_ERR(pidfd_send_signal(fd, SIGUSR2, &si, 0), EINVAL);
    si.si_code = SI_QUEUE;
    CHECK_EQ(pidfd_send_signal(fd, SIGUSR1, &si, 0), 0);
    CHECK_EQ(waitid(P_PIDFD, fd, &si, WEXITED), 0);
    CHECK_EQ(si.si_code, CLD_KILLED);
    CHECK_EQ(si.si_status, SIGUSR1);
    close(fd);
    close(p[0]);
    close(p[1]);

    /* pidfd_getfd: the child's end of a pipe, copied into this process. */
    int q[2];
    CHECK_OK(pipe(q));
    CHECK_OK(pipe(p));
    c = CHECK_OK(fork());
    if (c == 0) {
        /* Keeps q[1] open as descriptor 100, then waits. */
        CHECK_OK(dup2(q[1], 100));
        close(q[1]);
        close(q[0]);
        close(p[1]);
        char b;
        _exit(read(p[0], &b, 1) == 1 ? 0 : 1);
    }
    close(q[1]);
    fd = CHECK_OK(pidfd_open(c, 0));
    /* The child may not have made descriptor 100 yet. */
    int got = -1;
    for (int i = 0; i < 1000 && got < 0; i++) {
        got = pidfd_getfd(fd, 100, 0);
        if (got < 0) {
            CHECK_EQ(errno, EBADF);
            usleep(1000);
        }
    }
    CHECK(got >= 0);
    CHECK_EQ(fcntl(got, F_GETFD), FD_CLOEXEC);
    CHECK_ERR(pidfd_getfd(fd, 100, 1), EINVAL);
    CHECK_ERR(pidfd_getfd(fd, 555, 0), EBADF);
    CHECK_EQ(write(got, "z", 1), 1);
    char b = 0;
    CHECK_EQ(read(q[0], &b, 1), 1);
    CHECK_EQ(b, 'z');
    CHECK_EQ(write(p[1], "x", 1), 1);
    CHECK_EQ(waitid(P_PIDFD, fd, &si, WEXITED), 0);
    CHECK_EQ(si.si_status, 0);
    close(fd);

    /* A process that made itself non-dumpable (as ssh-agent does) keeps
     * its descriptors from its own user without CAP_SYS_PTRACE. */
    int r[2];
    CHECK_OK(pipe(p));
    CHECK_OK(pipe(r));
    c = CHECK_OK(fork());
    if (c == 0) {
        CHECK_OK(prctl(PR_SET_DUMPABLE, 0));
        CHECK_OK(dup2(r[1], 100));
        close(p[1]);
        CHECK_EQ(write(r[1], "r", 1), 1);
        char b;
        _exit(read(p[0], &b, 1) == 1 ? 0 : 1);
    }
    CHECK_EQ(read(r[0], &b, 1), 1);
    fd = CHECK_OK(pidfd_open(c, 0));
    pid_t checker = CHECK_OK(fork());
    if (checker == 0) {
        struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct d[2];
        CHECK_OK(syscall(SYS_capget, &h, d));
        d[0].effective &= ~(1u << CAP_SYS_PTRACE);
        CHECK_OK(syscall(SYS_capset, &h, d));
        CHECK_ERR(pidfd_getfd(fd, 100, 0), EPERM);
        _exit(0);
    }
    int status;
    CHECK_EQ(waitpid(checker, &status, 0), checker);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(write(p[1], "x", 1), 1);
    CHECK_EQ(waitid(P_PIDFD, fd, &si, WEXITED), 0);
    CHECK_EQ(si.si_status, 0);
    close(fd);

    /* clone3 with CLONE_PIDFD: the parent gets a close-on-exec pidfd. */
    int pfd = -1;
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = CLONE_PIDFD;
    ca.pidfd = (uintptr_t)&pfd;
    ca.exit_signal = SIGCHLD;
    c = CHECK_OK(syscall(SYS_clone3, &ca, sizeof ca));
    if (c == 0)
        _exit(5);
    CHECK(pfd >= 0);
    CHECK_EQ(fcntl(pfd, F_GETFD), FD_CLOEXEC);
    CHECK(fdinfo_has(pfd, "Pid:", c));
    CHECK_EQ(readable(pfd, 10000), 1);
    CHECK_EQ(waitid(P_PIDFD, pfd, &si, WEXITED), 0);
    CHECK_EQ(si.si_pid, c);
    CHECK_EQ(si.si_status, 5);
    close(pfd);

    /* A larger struct is fine when its extra bytes are zero. */
    unsigned char big[128];
    memset(big, 0, sizeof big);
    memcpy(big, &ca, sizeof ca);
    ((struct clone_args *)big)->flags = 0;
    c = CHECK_OK(syscall(SYS_clone3, big, sizeof big));
    if (c == 0)
        _exit(6);
    CHECK_EQ(waitpid(c, NULL, 0), c);
    big[100] = 1;
    CHECK_ERR(syscall(SYS_clone3, big, sizeof big), E2BIG);
    CHECK_ERR(syscall(SYS_clone3, big, 5000), E2BIG);
    CHECK_ERR(syscall(SYS_clone3, &ca, 63), EINVAL);
    CHECK_ERR(syscall(SYS_clone3, (void *)8, sizeof ca), EFAULT);
    memset(&ca, 0, sizeof ca);
    ca.flags = SIGCHLD;
    CHECK_ERR(syscall(SYS_clone3, &ca, sizeof ca), EINVAL);
    ca.flags = 0;
    ca.stack = (uintptr_t)big;
    CHECK_ERR(syscall(SYS_clone3, &ca, sizeof ca), EINVAL);
    ca.stack = 0;
    ca.exit_signal = 65;
    CHECK_ERR(syscall(SYS_clone3, &ca, sizeof ca), EINVAL);
    ca.exit_signal = SIGCHLD;
    pid_t tids[40] = {0};
    ca.set_tid = (uintptr_t)tids;
    ca.set_tid_size = 40;
    CHECK_ERR(syscall(SYS_clone3, &ca, sizeof ca), EINVAL);

    /* Legacy clone: the pidfd goes where parent_tid points, so not both. */
    CHECK_ERR(syscall(SYS_clone, CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, 0, &pfd, 0, 0), EINVAL);
    pfd = -1;
    c = CHECK_OK(syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, &pfd, 0, 0));
    if (c == 0)
        _exit(8);
    CHECK(pfd >= 0);
    CHECK_EQ(waitid(P_PIDFD, pfd, &si, WEXITED), 0);
    CHECK_EQ(si.si_status, 8);

    /* A /proc/[pid] directory serves pidfd_send_signal as a pidfd (not
     * waitid or pidfd_getfd); a task/[tid] directory or another directory
     * does not (EBADF); a reaped process's is ESRCH. */
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d", getpid());
    int procfd = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    CHECK_OK(sigprocmask(SIG_BLOCK, &usr2, NULL));
    CHECK_OK(pidfd_send_signal(procfd, SIGUSR2, NULL, 0));
    struct timespec now = {0, 0};
    CHECK_EQ(sigtimedwait(&usr2, &si, &now), SIGUSR2);
    CHECK_EQ(si.si_pid, getpid());
    CHECK_ERR(waitid(P_PIDFD, procfd, &si, WEXITED | WNOHANG), EBADF);
    close(procfd);
    snprintf(dir, sizeof dir, "/proc/%d/task/%d", getpid(), getpid());
    procfd = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
    CHECK_ERR(pidfd_send_signal(procfd, SIGUSR2, NULL, 0), EBADF);
    close(procfd);
    procfd = CHECK_OK(open("/proc", O_RDONLY | O_DIRECTORY));
    CHECK_ERR(pidfd_send_signal(procfd, SIGUSR2, NULL, 0), EBADF);
    close(procfd);
    int hold[2];
    CHECK_OK(pipe(hold));
    c = CHECK_OK(fork());
    if (c == 0) {
        char b;
        close(hold[1]);
        _exit(read(hold[0], &b, 1) == 0 ? 0 : 1);
    }
    close(hold[0]);
    snprintf(dir, sizeof dir, "/proc/%d", c);
    procfd = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
    close(hold[1]);
    CHECK_EQ(waitpid(c, NULL, 0), c);
    CHECK_ERR(pidfd_send_signal(procfd, SIGUSR2, NULL, 0), ESRCH);
    close(procfd);

    /* A zombie not yet reaped can be opened (asyncio's pidfd watcher
     * opens children that may have exited already): its pidfd is
     * readable at once and reaps it; once reaped, ESRCH. */
    c = CHECK_OK(fork());
    if (c == 0)
        _exit(5);
    CHECK_OK(waitid(P_PID, c, &si, WEXITED | WNOWAIT));
    int zfd = CHECK_OK(pidfd_open(c, 0));
    struct pollfd zp = {zfd, POLLIN, 0};
    CHECK_EQ(poll(&zp, 1, 0), 1);
    CHECK_EQ(zp.revents, POLLIN);
    /* A zombie is still there to signal (the signal does nothing); the
     * siginfo's checks still apply. */
    CHECK_OK(pidfd_send_signal(zfd, 0, NULL, 0));
    CHECK_OK(pidfd_send_signal(zfd, SIGUSR1, NULL, 0));
    memset(&si, 0, sizeof(si));
    si.si_signo = SIGUSR2;
    si.si_code = SI_QUEUE;
    CHECK_ERR(pidfd_send_signal(zfd, SIGUSR1, &si, 0), EINVAL);
    CHECK_OK(pidfd_send_signal(zfd, SIGUSR2, &si, 0));
    si.si_code = SI_USER;
    CHECK_ERR(pidfd_send_signal(zfd, SIGUSR2, &si, 0), EPERM);
    CHECK_ERR(pidfd_send_signal(zfd, 65, NULL, 0), EINVAL);
    CHECK_EQ(waitid(P_PIDFD, zfd, &si, WEXITED), 0);
    CHECK_EQ(si.si_status, 5);
    CHECK_ERR(pidfd_open(c, 0), ESRCH);
    /* Reaped: it hangs up too (Linux 6.10), and is gone to signals. */
    zp.revents = 0;
    CHECK_EQ(poll(&zp, 1, 0), 1);
    CHECK_EQ(zp.revents, POLLIN | POLLHUP);
    CHECK_ERR(pidfd_send_signal(zfd, 0, NULL, 0), ESRCH);
    close(zfd);
    thread_pidfds();
    return 0;
}
