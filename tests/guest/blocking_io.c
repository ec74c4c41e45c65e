/* blocking_io.c — waits that end the way Linux ends them: a blocking splice
 * from an empty Unix socket waits (EINTR on a signal) and SPLICE_F_NONBLOCK
 * or O_NONBLOCK make it fail at once; a socket wait with a timeout
 * (SO_RCVTIMEO) is not restarted by a signal with SA_RESTART (EINTR), and
 * accept honours SO_RCVTIMEO (EAGAIN at the timeout). A FIFO open that
 * waits for its writer is restarted after a handler with SA_RESTART; a
 * Unix stream send carrying descriptors honours SO_SNDTIMEO and sends
 * them once there is room; a datagram sent to a full receiver waits for
 * room (EINTR on a signal) and goes once the receiver reads.
 */
#include "check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

static volatile sig_atomic_t alarms;

static void on_alarm(int sig) {
    (void)sig;
    alarms++;
}

/* SIGALRM calls on_alarm, restarting calls when `restart`. */
static void handle_alarm(int restart) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = restart ? SA_RESTART : 0;
    CHECK_OK(sigaction(SIGALRM, &sa, NULL));
}

/* A single SIGALRM in `ms` milliseconds. */
static void alarm_in(long ms) {
    struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
    CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void splice_waits_for_a_socket(void) {
    int sv[2], p[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CHECK_OK(pipe(p));
    CHECK_ERR(splice(sv[0], NULL, p[1], NULL, 16, SPLICE_F_NONBLOCK), EAGAIN);

    handle_alarm(0);
    alarms = 0;
    double t0 = now();
    alarm_in(150);
    CHECK_ERR(splice(sv[0], NULL, p[1], NULL, 16, 0), EINTR);
    CHECK_EQ(alarms, 1);
    CHECK(now() - t0 > 0.1);

    /* Data that is there moves at once. */
    CHECK_EQ(write(sv[1], "hello", 5), 5);
    CHECK_EQ(splice(sv[0], NULL, p[1], NULL, 16, 0), 5);
    char buf[8];
    CHECK_EQ(read(p[0], buf, sizeof buf), 5);

    /* O_NONBLOCK on the socket: no wait either. */
    CHECK_OK(fcntl(sv[0], F_SETFL, O_NONBLOCK));
    CHECK_ERR(splice(sv[0], NULL, p[1], NULL, 16, 0), EAGAIN);
    close(sv[0]);
    close(sv[1]);
    close(p[0]);
    close(p[1]);
}

static void loopback(struct sockaddr_in *a) {
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static void set_rcvtimeo(int fd, long ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
}

static void a_timed_wait_is_not_restarted(void) {
    int u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
    struct sockaddr_in a;
    loopback(&a);
    CHECK_OK(bind(u, (struct sockaddr *)&a, sizeof a));
    /* The timeout is far beyond the alarm, so that a loaded machine's
     * scheduling delays cannot let it expire first. */
    set_rcvtimeo(u, 3000);
    handle_alarm(1);
    alarms = 0;
    double t0 = now();
    alarm_in(100);
    char buf[8];
    CHECK_ERR(recv(u, buf, sizeof buf, 0), EINTR);
    CHECK_EQ(alarms, 1);
    CHECK(now() - t0 < 2.5);
    close(u);
}

static void accept_times_out(void) {
    int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a;
    loopback(&a);
    CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof a));
    CHECK_OK(listen(l, 4));
    set_rcvtimeo(l, 150);
    /* A guard: without the timeout the alarm ends the wait (EINTR). */
    handle_alarm(0);
    alarm_in(3000);
    double t0 = now();
    CHECK_ERR(accept(l, NULL, NULL), EAGAIN);
    CHECK(now() - t0 > 0.1);
    alarm_in(0);
    close(l);
}

/* A child that sleeps `ms` and then runs `act` and exits 0 if it
 * returned 0. */
static pid_t later(long ms, int (*act)(void *), void *arg) {
    pid_t p = CHECK_OK(fork());
    if (p == 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
        _exit(act(arg) == 0 ? 0 : 1);
    }
    return p;
}

static void reap_ok(pid_t p) {
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
}

static int open_and_write(void *path) {
    int fd = open(path, O_WRONLY);
    return fd >= 0 && write(fd, "fifo", 4) == 4 ? 0 : 1;
}

static void a_fifo_open_is_restarted(void) {
    const char *path = scratch_path("restart_fifo");
    CHECK_OK(mkfifo(path, 0600));
    handle_alarm(1);
    alarms = 0;
    pid_t c = later(400, open_and_write, (void *)path);
    alarm_in(100);
    int r = CHECK_OK(open(path, O_RDONLY));
    CHECK_EQ(alarms, 1);
    char buf[8];
    CHECK_EQ(read(r, buf, sizeof buf), 4);
    CHECK_MEM(buf, "fifo", 4);
    close(r);
    reap_ok(c);
    CHECK_OK(unlink(path));
}

/* Sends one byte with descriptor `fd` over `s`. */
static ssize_t send_fd(int s, int fd) {
    char byte = 'r';
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return sendmsg(s, &m, 0);
}

static void a_send_with_descriptors_honours_sndtimeo(void) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    char chunk[4096] = {0};
    while (send(sv[0], chunk, sizeof chunk, MSG_DONTWAIT) > 0) {
    }
    CHECK_EQ(errno, EAGAIN);
    struct timeval tv = {0, 150000};
    CHECK_OK(setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv));
    /* A guard: without the timeout the alarm ends the wait (EINTR). */
    handle_alarm(0);
    alarm_in(3000);
    double t0 = now();
    CHECK_ERR(send_fd(sv[0], sv[0]), EAGAIN);
    CHECK(now() - t0 > 0.1);
    alarm_in(0);
    /* Drained, the same send goes, and its descriptor arrives once. */
    CHECK_OK(fcntl(sv[1], F_SETFL, O_NONBLOCK));
    while (read(sv[1], chunk, sizeof chunk) > 0) {
    }
    CHECK_EQ(send_fd(sv[0], sv[0]), 1);
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    CHECK_EQ(recvmsg(sv[1], &m, 0), 1);
    CHECK_EQ(byte, 'r');
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHECK(c != NULL && c->cmsg_type == SCM_RIGHTS);
    int got;
    memcpy(&got, CMSG_DATA(c), sizeof got);
    CHECK_OK(close(got));
    close(sv[0]);
    close(sv[1]);
}

static int read_one(void *fd) {
    char buf[64];
    return recv(*(int *)fd, buf, sizeof buf, 0) >= 0 ? 0 : 1;
}

static void a_datagram_waits_for_room_at_its_destination(void) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, "\0husk-blocking-io", 18);
    socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 18;
    int rx = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
    CHECK_OK(bind(rx, (struct sockaddr *)&a, alen));
    int tx = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
    while (sendto(tx, "d", 1, MSG_DONTWAIT, (struct sockaddr *)&a, alen) == 1) {
    }
    CHECK_EQ(errno, EAGAIN);
    /* A signal ends the wait (no SA_RESTART: EINTR). */
    handle_alarm(0);
    alarms = 0;
    alarm_in(100);
    CHECK_ERR(sendto(tx, "d", 1, 0, (struct sockaddr *)&a, alen), EINTR);
    CHECK_EQ(alarms, 1);
    /* A receive makes room: the waiting send goes. */
    pid_t c = later(150, read_one, &rx);
    CHECK_EQ(sendto(tx, "d", 1, 0, (struct sockaddr *)&a, alen), 1);
    reap_ok(c);
    close(tx);
    close(rx);
}

int main(void) {
    splice_waits_for_a_socket();
    a_timed_wait_is_not_restarted();
    accept_times_out();
    a_fifo_open_is_restarted();
    a_send_with_descriptors_honours_sndtimeo();
    a_datagram_waits_for_room_at_its_destination();
    return 0;
}
