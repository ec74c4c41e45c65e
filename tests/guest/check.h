/* check.h — tiny self-checking helpers shared by the husk guest programs.
 *
 * Every guest program checks one family of kernel behaviour and exits 0 when
 * everything matches Linux, or prints
 *     FAIL: file.c:LINE: what (got X, want Y)
 * on stderr and exits 1 at the first mismatch.
 *
 * Programs are compiled with: cc -static -O1 -Wall -Werror
 */
#ifndef HUSK_CHECK_H
#define HUSK_CHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <unistd.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#define FAILF(...)                                                            \
    do {                                                                      \
        fprintf(stderr, "FAIL: %s:%d: ", __FILE__, __LINE__);                 \
        fprintf(stderr, __VA_ARGS__);                                         \
        fprintf(stderr, "\n");                                                \
        exit(1);                                                              \
    } while (0)

/* CHECK(cond): a boolean condition. */
#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond))                                                          \
            FAILF("%s (errno %d: %s)", #cond, errno, strerror(errno));        \
    } while (0)

/* CHECK_EQ(got, want): integral equality. */
#define CHECK_EQ(got, want)                                                   \
    do {                                                                      \
        long long got_ = (long long)(got), want_ = (long long)(want);         \
        if (got_ != want_)                                                    \
            FAILF("%s == %s (got %lld, want %lld; errno %d: %s)", #got,       \
                  #want, got_, want_, errno, strerror(errno));                \
    } while (0)

/* CHECK_OK(expr): a syscall wrapper that must not return -1 (or < 0). */
#define CHECK_OK(expr)                                                        \
    ({                                                                        \
        errno = 0;                                                            \
        long long r_ = (long long)(expr);                                     \
        if (r_ < 0)                                                           \
            FAILF("%s (got %lld, want >= 0; errno %d: %s)", #expr, r_, errno, \
                  strerror(errno));                                           \
        r_;                                                                   \
    })

/* CHECK_ERR(expr, E): the call must return -1 with errno == E. */
#define CHECK_ERR(expr, E)                                                    \
    do {                                                                      \
        errno = 0;                                                            \
        long long r_ = (long long)(expr);                                     \
        int e_ = errno;                                                       \
        if (r_ != -1 || e_ != (E))                                            \
            FAILF("%s (got ret %lld errno %d %s, want -1 errno %d %s)",       \
                  #expr, r_, e_, strerror(e_), (int)(E), strerror(E));        \
    } while (0)

/* CHECK_STR(got, want): string equality. */
#define CHECK_STR(got, want)                                                  \
    do {                                                                      \
        const char *g_ = (got), *w_ = (want);                                 \
        if (g_ == NULL || strcmp(g_, w_) != 0)                                \
            FAILF("%s (got \"%s\", want \"%s\")", #got, g_ ? g_ : "(null)",   \
                  w_);                                                        \
    } while (0)

/* CHECK_MEM(got, want, n): byte equality. */
#define CHECK_MEM(got, want, n)                                               \
    do {                                                                      \
        if (memcmp((got), (want), (n)) != 0)                                  \
            FAILF("%s equals %s over %zu bytes", #got, #want, (size_t)(n));   \
    } while (0)

/* A fresh scratch directory under /tmp, removed at exit. */
static char husk_scratch_[64] __attribute__((unused));

static inline int husk_rm_cb_(const char *p, const struct stat *sb, int flag,
                       struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    remove(p);
    return 0;
}

static inline void husk_scratch_cleanup_(void) {
    if (husk_scratch_[0]) {
        if (chdir("/") != 0) { /* ignore */ }
        nftw(husk_scratch_, husk_rm_cb_, 16, FTW_DEPTH | FTW_PHYS);
    }
}

static inline const char *scratch_dir(void) {
    if (!husk_scratch_[0]) {
        strcpy(husk_scratch_, "/tmp/husk-guest-XXXXXX");
        if (mkdtemp(husk_scratch_) == NULL)
            FAILF("mkdtemp: %s", strerror(errno));
        atexit(husk_scratch_cleanup_);
    }
    return husk_scratch_;
}

/* "<scratch>/<name>" in a fresh heap string (never freed; programs are short). */
static inline const char *scratch_path(const char *name) {
    char *b = NULL;
    if (asprintf(&b, "%s/%s", scratch_dir(), name) < 0)
        FAILF("asprintf: out of memory");
    return b;
}

/* Read a whole small file into buf (NUL-terminated); returns length or -1. */
static inline long read_file(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return (long)n;
}

/* The line of /proc/self/mountinfo whose mount point is `path` (the last,
 * topmost, one), or "". */
static inline const char *mountinfo_of(const char *path) {
    static char found[1024];
    char line[1024];
    found[0] = 0;
    FILE *f = fopen("/proc/self/mountinfo", "r");
    CHECK(f != NULL);
    while (fgets(line, sizeof line, f)) {
        char mp[512];
        if (sscanf(line, "%*s %*s %*s %*s %511s", mp) == 1 && strcmp(mp, path) == 0)
            snprintf(found, sizeof found, "%s", line);
    }
    fclose(f);
    return found;
}

/* Runs `fn` in a child and returns its exit status (it must exit). */
static inline int exit_status_of(int (*fn)(void)) {
    pid_t p = CHECK_OK(fork());
    if (p == 0)
        _exit(fn());
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    if (!WIFEXITED(st))
        FAILF("child status %#x", st);
    return WEXITSTATUS(st);
}

/* Waits for tracee `pid` to stop; returns its wait status. */
static inline int wait_stop(pid_t pid) {
    int st;
    CHECK_EQ(waitpid(pid, &st, __WALL), pid);
    if (!WIFSTOPPED(st))
        FAILF("pid %d not stopped (status %#x)", pid, st);
    return st;
}

/* In a child: asks to be traced by its parent and stops itself (exit 90
 * if it cannot be traced). */
static inline void trace_me_and_stop(void) {
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
        _exit(90);
    raise(SIGSTOP);
}

#endif
