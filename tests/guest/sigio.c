/* sigio.c — signal-driven I/O as Linux does it: with O_ASYNC and an
 * F_SETOWN owner, a pipe end, a socket, a pseudo-terminal master or an
 * inotify instance sends SIGIO when it becomes ready; F_SETSIG picks
 * another signal, which carries the reason (si_code POLL_IN, POLL_OUT),
 * the poll band and the descriptor; F_SETOWN_EX names a thread or a
 * group; an owner set by someone who could not signal it hears nothing;
 * a file without signal-driven I/O (eventfd) does not take the flag. */
#include "check.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>

/* Every signal here stays blocked and is taken with sigtimedwait, except
 * in the SA_SIGINFO check. */
static sigset_t io_signals;

static void block_all(void) {
    sigemptyset(&io_signals);
    sigaddset(&io_signals, SIGIO);
    sigaddset(&io_signals, SIGURG);
    for (int s = SIGRTMIN; s <= SIGRTMIN + 3; s++)
        sigaddset(&io_signals, s);
    CHECK_OK(sigprocmask(SIG_BLOCK, &io_signals, NULL));
}

/* The next instance of `sig` within `ms` milliseconds, or -1. */
static int take(int sig, siginfo_t *info, int ms) {
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    memset(info, 0, sizeof(*info));
    return sigtimedwait(&one, info, &ts);
}

static void expect(int sig, int code, int fd, long band) {
    siginfo_t si;
    CHECK_EQ(take(sig, &si, 5000), sig);
    CHECK_EQ(si.si_code, code);
    if (code != SI_KERNEL) {
        CHECK_EQ(si.si_fd, fd);
        CHECK_EQ(si.si_band, band);
    }
}

static void expect_none(int sig) {
    siginfo_t si;
    CHECK_ERR(take(sig, &si, 100), EAGAIN);
}

static void owned_async(int fd, int sig) {
    CHECK_OK(fcntl(fd, F_SETOWN, getpid()));
    CHECK_OK(fcntl(fd, F_SETSIG, sig));
    CHECK_OK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC | O_NONBLOCK));
}

#define BAND_IN (POLLIN | POLLRDNORM)
#define BAND_OUT (POLLOUT | POLLWRNORM | POLLWRBAND)

/* A pipe's reader hears of data (plain SIGIO, SI_KERNEL) and of the
 * writer's close; its writer of room; clearing O_ASYNC stops it. */
static void pipes(void) {
    int p[2];
    char b[8];
    CHECK_OK(pipe(p));
    CHECK_EQ(fcntl(p[0], F_GETOWN), 0);
    CHECK_EQ(fcntl(p[0], F_GETSIG), 0);
    CHECK_OK(fcntl(p[0], F_SETOWN, getpid()));
    CHECK_EQ(fcntl(p[0], F_GETOWN), getpid());
    CHECK_OK(fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK));
    CHECK_EQ(fcntl(p[0], F_GETFL) & (O_ASYNC | O_NONBLOCK), O_ASYNC | O_NONBLOCK);

    CHECK_EQ(write(p[1], "ab", 2), 2);
    expect(SIGIO, SI_KERNEL, 0, 0);
    expect_none(SIGIO);
    /* Its own read concerns the writer only. */
    CHECK_EQ(read(p[0], b, 1), 1);
    expect_none(SIGIO);

    /* The writer, with a realtime signal: room after each read. */
    owned_async(p[1], SIGRTMIN + 1);
    CHECK_EQ(read(p[0], b, 1), 1);
    expect(SIGRTMIN + 1, POLL_OUT, p[1], BAND_OUT);
    expect_none(SIGIO);

    /* Without O_ASYNC, nothing. */
    CHECK_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
    CHECK_EQ(fcntl(p[0], F_GETFL) & O_ASYNC, 0);
    CHECK_EQ(write(p[1], "c", 1), 1);
    expect_none(SIGIO);

    /* FIOASYNC turns it back on; the writer's close is news to the
     * reader, reported as POLL_IN with the descriptor FIOASYNC used. */
    int on = 1;
    int r = CHECK_OK(dup(p[0]));
    CHECK_OK(fcntl(r, F_SETSIG, SIGRTMIN));
    CHECK_OK(ioctl(r, FIOASYNC, &on));
    CHECK_EQ(fcntl(p[0], F_GETFL) & O_ASYNC, O_ASYNC);
    close(p[1]);
    expect(SIGRTMIN, POLL_IN, r, BAND_IN);
    close(p[0]);
    close(r);
}

/* F_SETSIG: 0 (SIGIO) to 64; realtime signals queue one per event and
 * reach an SA_SIGINFO handler with the descriptor, band and reason. */
static volatile sig_atomic_t handled, handled_fd, handled_code;
static volatile long handled_band;

static void on_rt(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    handled++;
    handled_fd = si->si_fd;
    handled_code = si->si_code;
    handled_band = si->si_band;
}

static void setsig(void) {
    int p[2];
    char b[8];
    CHECK_OK(pipe(p));
    CHECK_ERR(fcntl(p[0], F_SETSIG, 65), EINVAL);
    CHECK_ERR(fcntl(p[0], F_SETSIG, -1), EINVAL);
    CHECK_OK(fcntl(p[0], F_SETSIG, 64));
    CHECK_EQ(fcntl(p[0], F_GETSIG), 64);
    owned_async(p[0], SIGRTMIN);
    CHECK_EQ(fcntl(p[0], F_GETSIG), SIGRTMIN);

    CHECK_EQ(write(p[1], "a", 1), 1);
    CHECK_EQ(write(p[1], "b", 1), 1);
    expect(SIGRTMIN, POLL_IN, p[0], BAND_IN);
    expect(SIGRTMIN, POLL_IN, p[0], BAND_IN);
    expect_none(SIGRTMIN);
    CHECK_EQ(read(p[0], b, 2), 2);

    /* SIGIO chosen explicitly carries the siginfo too. */
    CHECK_OK(fcntl(p[0], F_SETSIG, SIGIO));
    CHECK_EQ(write(p[1], "c", 1), 1);
    expect(SIGIO, POLL_IN, p[0], BAND_IN);
    CHECK_EQ(read(p[0], b, 1), 1);

    struct sigaction sa = {.sa_sigaction = on_rt, .sa_flags = SA_SIGINFO};
    CHECK_OK(sigaction(SIGRTMIN, &sa, NULL));
    CHECK_OK(fcntl(p[0], F_SETSIG, SIGRTMIN));
    CHECK_EQ(write(p[1], "d", 1), 1);
    sigset_t open;
    CHECK_OK(sigprocmask(SIG_BLOCK, NULL, &open));
    sigdelset(&open, SIGRTMIN);
    sigsuspend(&open);
    CHECK_EQ(handled, 1);
    CHECK_EQ(handled_fd, p[0]);
    CHECK_EQ(handled_code, POLL_IN);
    CHECK_EQ(handled_band, BAND_IN);
    close(p[0]);
    close(p[1]);
}

/* A Unix stream socket hears of the peer's data, not of its own reads
 * and writes. */
static void unix_stream(void) {
    int sv[2];
    char b[8];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    owned_async(sv[0], SIGRTMIN + 2);
    CHECK_EQ(write(sv[1], "ping", 4), 4);
    expect(SIGRTMIN + 2, POLL_IN, sv[0], BAND_IN);
    CHECK_EQ(read(sv[0], b, 4), 4);
    CHECK_EQ(write(sv[0], "pong", 4), 4);
    expect_none(SIGRTMIN + 2);
    close(sv[0]);
    close(sv[1]);

    /* A datagram pair alike. */
    CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
    owned_async(sv[1], SIGRTMIN + 2);
    CHECK_EQ(send(sv[0], "x", 1, 0), 1);
    expect(SIGRTMIN + 2, POLL_IN, sv[1], BAND_IN);
    CHECK_EQ(recv(sv[1], b, 1, 0), 1);
    expect_none(SIGRTMIN + 2);
    close(sv[0]);
    close(sv[1]);
}

/* An accepted TCP socket hears of the data its peer sends, and of urgent
 * data: SIGURG, and the F_SETSIG signal with POLL_PRI (among the others
 * the byte's arrival sends). */
static void tcp(void) {
    int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
    CHECK_OK(listen(l, 1));
    CHECK_OK(getsockname(l, (struct sockaddr *)&a, &len));
    int c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
    int s = CHECK_OK(accept(l, NULL, NULL));
    owned_async(s, SIGRTMIN + 3);
    CHECK_EQ(send(c, "data", 4, 0), 4);
    expect(SIGRTMIN + 3, POLL_IN, s, BAND_IN);
    CHECK_EQ(send(c, "!", 1, MSG_OOB), 1);
    siginfo_t si;
    CHECK_EQ(take(SIGURG, &si, 5000), SIGURG);
    int pri = 0;
    for (int i = 0; i < 16 && !pri && take(SIGRTMIN + 3, &si, 2000) == SIGRTMIN + 3; i++)
        pri = si.si_code == POLL_PRI && si.si_fd == s && si.si_band == (POLLPRI | POLLRDBAND);
    CHECK(pri);
    close(c);
    close(s);
    close(l);
}

/* A pseudo-terminal master hears of what the replica writes. O_ASYNC
 * makes the caller the owner of a terminal that has none (a pipe's stays
 * without). */
static void pty(void) {
    int m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
    CHECK_OK(grantpt(m));
    CHECK_OK(unlockpt(m));
    int s = CHECK_OK(open(ptsname(m), O_RDWR | O_NOCTTY));
    struct termios t;
    CHECK_OK(tcgetattr(s, &t));
    cfmakeraw(&t);
    CHECK_OK(tcsetattr(s, TCSANOW, &t));
    CHECK_EQ(fcntl(m, F_GETOWN), 0);
    CHECK_OK(fcntl(m, F_SETFL, O_ASYNC | O_NONBLOCK));
    CHECK_EQ(fcntl(m, F_GETOWN), getpid());
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_OK(fcntl(p[0], F_SETFL, O_ASYNC));
    CHECK_EQ(fcntl(p[0], F_GETOWN), 0);
    close(p[0]);
    close(p[1]);
    owned_async(m, SIGRTMIN + 1);
    CHECK_EQ(write(s, "out", 3), 3);
    expect(SIGRTMIN + 1, POLL_IN, m, BAND_IN);
    close(s);
    close(m);
}

/* Takes every pending instance of `sig`. */
static void drain(int sig) {
    siginfo_t si;
    while (take(sig, &si, 0) == sig)
        ;
}

/* Each end of a pseudo-terminal hears of what the other end did: the
 * replica of input to read, the master of output; its own reads tell its
 * owner nothing. */
static void pty_sides(void) {
    int m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
    CHECK_OK(grantpt(m));
    CHECK_OK(unlockpt(m));
    int s = CHECK_OK(open(ptsname(m), O_RDWR | O_NOCTTY));
    struct termios t;
    CHECK_OK(tcgetattr(s, &t));
    cfmakeraw(&t);
    CHECK_OK(tcsetattr(s, TCSANOW, &t));
    owned_async(m, SIGRTMIN + 1);
    owned_async(s, SIGRTMIN + 2);
    /* What earlier cases left pending is not this one's. */
    drain(SIGRTMIN + 1);
    drain(SIGRTMIN + 2);
    char b[8];
    CHECK_EQ(write(m, "in", 2), 2);
    expect(SIGRTMIN + 2, POLL_IN, s, BAND_IN);
    CHECK_EQ(read(s, b, sizeof(b)), 2);
    expect_none(SIGRTMIN + 2);
    drain(SIGRTMIN + 1);
    CHECK_EQ(write(s, "out", 3), 3);
    expect(SIGRTMIN + 1, POLL_IN, m, BAND_IN);
    CHECK_EQ(read(m, b, sizeof(b)), 3);
    expect_none(SIGRTMIN + 1);
    close(s);
    close(m);
    drain(SIGRTMIN + 1);
    drain(SIGRTMIN + 2);
}

/* An inotify instance signals when an event is queued. */
static void inotify(void) {
    int in = CHECK_OK(inotify_init1(IN_NONBLOCK));
    CHECK_OK(inotify_add_watch(in, scratch_dir(), IN_CREATE));
    owned_async(in, SIGRTMIN);
    int f = CHECK_OK(open(scratch_path("new"), O_CREAT | O_WRONLY, 0600));
    expect(SIGRTMIN, POLL_IN, in, BAND_IN);
    close(f);
    close(in);
}

/* eventfd has no signal-driven I/O: F_SETFL drops the flag (only a file
 * that signals keeps it), nothing is sent, and FIOASYNC fails with
 * ENOTTY. */
static void eventfd_none(void) {
    int e = CHECK_OK(eventfd(0, EFD_NONBLOCK));
    owned_async(e, 0);
    CHECK_EQ(fcntl(e, F_GETFL) & (O_ASYNC | O_NONBLOCK), O_NONBLOCK);
    uint64_t one = 1;
    CHECK_EQ(write(e, &one, 8), 8);
    expect_none(SIGIO);
    int on = 1, off = 0;
    CHECK_ERR(ioctl(e, FIOASYNC, &on), ENOTTY);
    CHECK_OK(ioctl(e, FIOASYNC, &off));
    close(e);
}

/* F_SETOWN_EX round trips: a thread, a group (F_GETOWN reads it
 * negative), back to the process. A group owner is signalled (in a
 * child that leads a group of its own). */
static void owner_ex(void) {
    int p[2];
    CHECK_OK(pipe(p));
    struct f_owner_ex ex = {.type = F_OWNER_TID, .pid = gettid()};
    CHECK_OK(fcntl(p[0], F_SETOWN_EX, &ex));
    memset(&ex, 0, sizeof(ex));
    CHECK_OK(fcntl(p[0], F_GETOWN_EX, &ex));
    CHECK_EQ(ex.type, F_OWNER_TID);
    CHECK_EQ(ex.pid, gettid());
    CHECK_EQ(fcntl(p[0], F_GETOWN), gettid());
    ex = (struct f_owner_ex){.type = F_OWNER_PGRP, .pid = getpgrp()};
    CHECK_OK(fcntl(p[0], F_SETOWN_EX, &ex));
    CHECK_EQ(fcntl(p[0], F_GETOWN), -getpgrp());
    CHECK_OK(fcntl(p[0], F_SETOWN, getpid()));
    CHECK_OK(fcntl(p[0], F_GETOWN_EX, &ex));
    CHECK_EQ(ex.type, F_OWNER_PID);
    CHECK_EQ(ex.pid, getpid());
    ex.type = 3;
    CHECK_ERR(fcntl(p[0], F_SETOWN_EX, &ex), EINVAL);

    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        CHECK_OK(setpgid(0, 0));
        CHECK_OK(fcntl(p[0], F_SETOWN, -getpgrp()));
        CHECK_OK(fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK));
        CHECK_EQ(write(p[1], "g", 1), 1);
        expect(SIGIO, SI_KERNEL, 0, 0);
        /* A thread owner: the calling thread. */
        ex = (struct f_owner_ex){.type = F_OWNER_TID, .pid = gettid()};
        CHECK_OK(fcntl(p[0], F_SETOWN_EX, &ex));
        CHECK_EQ(write(p[1], "t", 1), 1);
        expect(SIGIO, SI_KERNEL, 0, 0);
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(child, &st, 0), child);
    CHECK_EQ(st, 0);
    close(p[0]);
    close(p[1]);
}

/* An owner that is gone is nobody: a process reaped, or a group whose
 * last member was, reads back as 0 (F_GETOWN_EX keeps the type) and is
 * sent nothing. A zombie still owns. */
static void gone_owner(void) {
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_OK(fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK));
    for (int group = 0; group <= 1; group++) {
        pid_t child = CHECK_OK(fork());
        if (child == 0) {
            CHECK_OK(setpgid(0, 0));
            pause();
            _exit(0);
        }
        /* The group exists once the child made it (either may run first). */
        setpgid(child, child);
        CHECK_OK(fcntl(p[0], F_SETOWN, group ? -child : child));
        CHECK_OK(kill(child, SIGKILL));
        siginfo_t si;
        CHECK_OK(waitid(P_PID, child, &si, WEXITED | WNOWAIT));
        CHECK_EQ(fcntl(p[0], F_GETOWN), group ? -child : child);
        CHECK_EQ(waitpid(child, NULL, 0), child);
        CHECK_EQ(fcntl(p[0], F_GETOWN), 0);
        struct f_owner_ex ex;
        CHECK_OK(fcntl(p[0], F_GETOWN_EX, &ex));
        CHECK_EQ(ex.type, group ? F_OWNER_PGRP : F_OWNER_PID);
        CHECK_EQ(ex.pid, 0);
        CHECK_EQ(write(p[1], "x", 1), 1);
        expect_none(SIGIO);
        char c;
        CHECK_EQ(read(p[0], &c, 1), 1);
    }
    close(p[0]);
    close(p[1]);
}

/* As Linux's sigio_perm: an owner set by a process that could not signal
 * it (another uid, unprivileged) is not told; root's choice is. */
static void permission(void) {
    if (getuid() != 0)
        return;
    for (int as_nobody = 0; as_nobody <= 1; as_nobody++) {
        int p[2];
        CHECK_OK(pipe(p));
        pid_t parent = getpid();
        pid_t child = CHECK_OK(fork());
        if (child == 0) {
            if (as_nobody)
                CHECK_OK(setresuid(65534, 65534, 65534));
            CHECK_OK(fcntl(p[0], F_SETOWN, parent));
            CHECK_OK(fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK));
            _exit(0);
        }
        int st;
        CHECK_EQ(waitpid(child, &st, 0), child);
        CHECK_EQ(st, 0);
        CHECK_EQ(write(p[1], "x", 1), 1);
        if (as_nobody)
            expect_none(SIGIO);
        else
            expect(SIGIO, SI_KERNEL, 0, 0);
        close(p[0]);
        close(p[1]);
    }
}

int main(void) {
    block_all();
    pipes();
    setsig();
    unix_stream();
    tcp();
    pty();
    pty_sides();
    inotify();
    eventfd_none();
    owner_ex();
    gone_owner();
    permission();
    return 0;
}
