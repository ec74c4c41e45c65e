/* pty.c — pseudo-terminals: /dev/ptmx and /dev/pts/N (lock, number,
 * ttyname), the line discipline in canonical mode (echo, erase, kill, end
 * of file, output CR-LF) and raw mode (VMIN/VTIME), window size, the
 * signal characters reaching the foreground group, the controlling
 * terminal of a session (acquired on open, TIOCSCTTY, tcgetpgrp,
 * tcsetpgrp, tcgetsid, /dev/tty), SIGTTIN for a background reader,
 * hangups when either side closes, and a blocking master read that a
 * signal with SA_RESTART interrupts and restarts. */
#include "check.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

static int open_master(char *name, size_t len) {
    int m = CHECK_OK(posix_openpt(O_RDWR | O_NOCTTY));
    CHECK_OK(grantpt(m));
    CHECK_EQ(ptsname_r(m, name, len), 0);
    CHECK_ERR(open(name, O_RDWR | O_NOCTTY), EIO); /* locked */
    CHECK_OK(unlockpt(m));
    return m;
}

/* Reads what is there within a short while (the master's echo). */
static size_t drain(int fd, char *buf, size_t len) {
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (got < len - 1 && poll(&p, 1, 200) == 1 && (p.revents & POLLIN)) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = 0;
    return got;
}

static void write_all(int fd, const char *s) {
    CHECK_EQ(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void names_and_numbers(void) {
    char name[64];
    int m = open_master(name, sizeof name);
    unsigned n;
    CHECK_OK(ioctl(m, TIOCGPTN, &n));
    char want[64];
    snprintf(want, sizeof want, "/dev/pts/%u", n);
    CHECK(strcmp(name, want) == 0);
    int s = CHECK_OK(open(name, O_RDWR | O_NOCTTY));
    CHECK(isatty(s) && isatty(m));
    CHECK(strcmp(ttyname(s), name) == 0);
    struct stat st;
    CHECK_OK(fstat(s, &st));
    CHECK(S_ISCHR(st.st_mode));
    CHECK_EQ(major(st.st_rdev), 136);
    CHECK_EQ(minor(st.st_rdev), n);
    CHECK_EQ(st.st_uid, geteuid());
    close(s);
    close(m);
}

static void canonical_mode(void) {
    char name[64], buf[256];
    int m = open_master(name, sizeof name);
    int s = CHECK_OK(open(name, O_RDWR | O_NOCTTY));
    struct termios t;
    CHECK_OK(tcgetattr(s, &t));
    CHECK((t.c_lflag & (ICANON | ECHO | ISIG)) == (ICANON | ECHO | ISIG));
    CHECK((t.c_oflag & (OPOST | ONLCR)) == (OPOST | ONLCR));
    CHECK_EQ(t.c_cc[VINTR], 3);
    CHECK_EQ(t.c_cc[VERASE], 0x7f);
    CHECK_EQ(t.c_cc[VEOF], 4);

    /* Typing: erase a character, a word, end the line with CR. */
    write_all(m, "abc\x7f" "d foo\x17" "e\r");
    CHECK_EQ(read(s, buf, sizeof buf), 6);
    CHECK(memcmp(buf, "abd e\n", 6) == 0);
    drain(m, buf, sizeof buf);
    CHECK(strcmp(buf, "abc\b \bd foo\b \b\b \b\b \be\r\n") == 0);

    /* A partial line is not readable; the kill character empties it. */
    write_all(m, "junk\x15ok\n");
    CHECK_EQ(read(s, buf, sizeof buf), 3);
    CHECK(memcmp(buf, "ok\n", 3) == 0);
    drain(m, buf, sizeof buf);

    /* ^D ends a line without a newline; alone it reads as end of file. */
    write_all(m, "tail\x04");
    CHECK_EQ(read(s, buf, sizeof buf), 4);
    write_all(m, "\x04");
    CHECK_EQ(read(s, buf, sizeof buf), 0);
    CHECK_EQ(read(s, buf, 0), 0);
    drain(m, buf, sizeof buf);

    /* Output: newline becomes CR-LF. */
    write_all(s, "out\n");
    CHECK_EQ(drain(m, buf, sizeof buf), 5);
    CHECK(strcmp(buf, "out\r\n") == 0);

    /* FIONREAD on the replica counts finished lines only. */
    write_all(m, "12\n34");
    usleep(50000);
    int avail = -1;
    CHECK_OK(ioctl(s, FIONREAD, &avail));
    CHECK_EQ(avail, 3);
    tcflush(s, TCIFLUSH);
    CHECK_OK(ioctl(s, FIONREAD, &avail));
    CHECK_EQ(avail, 0);
    close(s);
    close(m);
}

static void raw_mode(void) {
    char name[64], buf[64];
    int m = open_master(name, sizeof name);
    int s = CHECK_OK(open(name, O_RDWR | O_NOCTTY));
    struct termios t;
    CHECK_OK(tcgetattr(s, &t));
    cfmakeraw(&t);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    CHECK_OK(tcsetattr(s, TCSANOW, &t));
    CHECK_EQ(read(s, buf, sizeof buf), 0); /* VMIN 0, VTIME 0: no wait */
    write_all(m, "q\r\x03");
    usleep(50000);
    CHECK_EQ(read(s, buf, sizeof buf), 3);
    CHECK(memcmp(buf, "q\r\x03", 3) == 0);
    CHECK_EQ(drain(m, buf, sizeof buf), 0); /* no echo */
    write_all(s, "x\n");
    CHECK_EQ(drain(m, buf, sizeof buf), 2); /* no CR-LF */

    t.c_cc[VTIME] = 2; /* VMIN 0, VTIME 0.2 s: waits, then 0 */
    CHECK_OK(tcsetattr(s, TCSANOW, &t));
    long long t0 = now_ms();
    CHECK_EQ(read(s, buf, sizeof buf), 0);
    CHECK(now_ms() - t0 >= 150);

    t.c_cc[VMIN] = 3; /* VMIN 3: waits for three bytes */
    t.c_cc[VTIME] = 0;
    CHECK_OK(tcsetattr(s, TCSANOW, &t));
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        usleep(100000);
        write_all(m, "a");
        usleep(100000);
        write_all(m, "bc");
        _exit(0);
    }
    CHECK_EQ(read(s, buf, sizeof buf), 3);
    CHECK_OK(waitpid(c, NULL, 0));

    /* VMIN 2, VTIME 1 with one byte queued: the inter-byte timer runs
     * from it, and the read returns that byte after 0.1 s. */
    t.c_cc[VMIN] = 2;
    t.c_cc[VTIME] = 1;
    CHECK_OK(tcsetattr(s, TCSANOW, &t));
    write_all(m, "z");
    usleep(50000);
    CHECK_EQ(read(s, buf, sizeof buf), 1);
    CHECK_EQ(buf[0], 'z');

    struct winsize w = {33, 111, 0, 0}, got;
    CHECK_OK(ioctl(m, TIOCSWINSZ, &w));
    CHECK_OK(ioctl(s, TIOCGWINSZ, &got));
    CHECK_EQ(got.ws_row, 33);
    CHECK_EQ(got.ws_col, 111);
    close(s);
    close(m);
}

static volatile sig_atomic_t got_int, got_winch;
static void on_int(int sig) { (void)sig; got_int = 1; }
static void on_winch(int sig) { (void)sig; got_winch = 1; }

/* In a new session: the terminal becomes controlling on open. */
static int session_child(const char *name, int m) {
    CHECK_OK(setsid());
    close(m);
    int s = CHECK_OK(open(name, O_RDWR));
    CHECK_EQ(tcgetpgrp(s), getpid());
    CHECK_EQ(tcgetsid(s), getpid());
    CHECK_OK(ioctl(s, TIOCSCTTY, 0)); /* already ours */
    int tty = CHECK_OK(open("/dev/tty", O_RDWR));
    close(tty);

    /* ^C typed at the master reaches the foreground group. */
    struct sigaction sa = {0};
    sa.sa_handler = on_int;
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_winch;
    sigaction(SIGWINCH, &sa, NULL);
    CHECK_EQ(write(s, "ready\n", 6), 6);
    for (int i = 0; i < 200 && !(got_int && got_winch); i++)
        usleep(10000);
    CHECK(got_int);
    CHECK(got_winch);

    /* A background group reading its terminal is stopped by SIGTTIN. */
    pid_t bg = CHECK_OK(fork());
    if (bg == 0) {
        setpgid(0, 0);
        char c;
        _exit(read(s, &c, 1) == 0 ? 3 : 4);
    }
    setpgid(bg, bg);
    int st;
    CHECK_EQ(waitpid(bg, &st, WUNTRACED), bg);
    CHECK(WIFSTOPPED(st));
    CHECK_EQ(WSTOPSIG(st), SIGTTIN);
    /* Put it in the foreground: continued, it reads (nothing, at once:
     * VMIN and VTIME are 0). */
    signal(SIGTTOU, SIG_IGN);
    struct termios t;
    CHECK_OK(tcgetattr(s, &t));
    t.c_lflag &= ~ICANON;
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    CHECK_OK(tcsetattr(s, TCSANOW, &t));
    CHECK_OK(tcsetpgrp(s, bg));
    CHECK_EQ(tcgetpgrp(s), bg);
    kill(bg, SIGCONT);
    CHECK_EQ(waitpid(bg, &st, 0), bg);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    CHECK_OK(tcsetpgrp(s, getpid()));
    CHECK_ERR(tcsetpgrp(s, 1), EPERM); /* not of this session */
    return 0;
}

static void sessions(void) {
    char name[64], buf[256];
    int m = open_master(name, sizeof name);
    pid_t c = CHECK_OK(fork());
    if (c == 0)
        _exit(session_child(name, m));
    /* Wait for the child's terminal, then type ^C and resize. */
    size_t got = 0;
    long long t0 = now_ms();
    while (!strstr(buf, "ready") && now_ms() - t0 < 5000) {
        ssize_t n = read(m, buf + got, sizeof buf - 1 - got);
        if (n > 0) {
            got += (size_t)n;
            buf[got] = 0;
        }
    }
    CHECK(strstr(buf, "ready") != NULL);
    write_all(m, "\x03");
    struct winsize w = {10, 20, 0, 0};
    CHECK_OK(ioctl(m, TIOCSWINSZ, &w));
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    close(m);
}

static void hangups(void) {
    char name[64], buf[16];
    int m = open_master(name, sizeof name);
    /* Before any replica was opened the master just has nothing to read. */
    CHECK_OK(fcntl(m, F_SETFL, O_NONBLOCK));
    CHECK_ERR(read(m, buf, sizeof buf), EAGAIN);
    struct pollfd fresh = {m, POLLIN | POLLOUT, 0};
    CHECK_EQ(poll(&fresh, 1, 0), 1);
    CHECK_EQ(fresh.revents, POLLOUT);
    CHECK_OK(fcntl(m, F_SETFL, 0));
    int s = CHECK_OK(open(name, O_RDWR | O_NOCTTY));
    close(s);
    CHECK_ERR(read(m, buf, sizeof buf), EIO); /* no replica */
    struct pollfd p = {m, POLLIN, 0};
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK(p.revents & POLLHUP);

    s = CHECK_OK(open(name, O_RDWR | O_NOCTTY));
    close(m);
    CHECK_EQ(read(s, buf, sizeof buf), 0); /* hung up: end of file */
    CHECK_ERR(write(s, "x", 1), EIO);
    p.fd = s;
    CHECK_EQ(poll(&p, 1, 0), 1);
    CHECK(p.revents & POLLHUP);
    close(s);
    CHECK_ERR(open(name, O_RDWR | O_NOCTTY), ENOENT); /* the pair is gone */
}

static volatile sig_atomic_t alarms;
static void on_alarm(int sig) { (void)sig; alarms++; }

static void a_master_read_is_restarted(void) {
    char name[64], buf[16];
    int m = open_master(name, sizeof name);
    int s = CHECK_OK(open(name, O_RDWR | O_NOCTTY));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    CHECK_OK(sigaction(SIGALRM, &sa, NULL));
    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        struct timespec ts = {0, 400 * 1000000L};
        nanosleep(&ts, NULL);
        _exit(write(s, "late", 4) == 4 ? 0 : 1);
    }
    alarms = 0;
    struct itimerval it = {{0, 0}, {0, 100000}};
    CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
    CHECK_EQ(read(m, buf, sizeof buf), 4);
    CHECK_MEM(buf, "late", 4);
    CHECK_EQ(alarms, 1);
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* The replica's read too (canonical: a line). */
    c = CHECK_OK(fork());
    if (c == 0) {
        struct timespec ts = {0, 400 * 1000000L};
        nanosleep(&ts, NULL);
        _exit(write(m, "line\n", 5) == 5 ? 0 : 1);
    }
    alarms = 0;
    CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
    CHECK_EQ(read(s, buf, sizeof buf), 5);
    CHECK_MEM(buf, "line\n", 5);
    CHECK_EQ(alarms, 1);
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    signal(SIGALRM, SIG_DFL);

    /* O_NONBLOCK in raw mode: what is there, short of VMIN, else EAGAIN. */
    struct termios t;
    CHECK_OK(tcgetattr(s, &t));
    cfmakeraw(&t);
    t.c_cc[VMIN] = 3;
    t.c_cc[VTIME] = 0;
    CHECK_OK(tcsetattr(s, TCSANOW, &t));
    CHECK_OK(fcntl(s, F_SETFL, O_NONBLOCK));
    CHECK_ERR(read(s, buf, sizeof buf), EAGAIN);
    write_all(m, "x");
    /* Not readable for poll, short of VMIN: give the byte a moment. */
    struct timespec moment = {0, 200 * 1000000L};
    nanosleep(&moment, NULL);
    CHECK_EQ(read(s, buf, sizeof buf), 1);
    close(s);
    close(m);
}

int main(void) {
    names_and_numbers();
    canonical_mode();
    raw_mode();
    sessions();
    hangups();
    a_master_read_is_restarted();
    printf("pty: ok\n");
    return 0;
}
