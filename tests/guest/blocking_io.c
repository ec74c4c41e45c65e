/* blocking_io.c — waits that end the way Linux ends them: a blocking splice
 * from an empty Unix socket waits (EINTR on a signal) and SPLICE_F_NONBLOCK
 * or O_NONBLOCK make it fail at once; a socket wait with a timeout
 * (SO_RCVTIMEO) is not restarted by a signal with SA_RESTART (EINTR), and
 * accept honours SO_RCVTIMEO (EAGAIN at the timeout).
 */
#include "check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
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

int main(void) {
    splice_waits_for_a_socket();
    a_timed_wait_is_not_restarted();
    accept_times_out();
    return 0;
}
