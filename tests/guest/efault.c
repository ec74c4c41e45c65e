/* efault.c — bad user pointers must give EFAULT (or exactly the errno Linux
 * gives when it checks something else first), never kill the process.
 *
 * Every call goes through syscall(2) so that libc never touches the
 * pointers itself. The program prints nothing on success and exits 0.
 */
#include "check.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#define PG 4096UL

/* Pointers the kernel cannot read (nor write). Filled in main(). */
static void *bad[8];
static int nbad;

/* For each unreadable pointer P: expr must return -1 with errno E. */
#define EACH_BAD(expr, E) EACH_BAD_FROM(0, expr, E)
/* Skipping NULL (index 0) for arguments where NULL means "not given". */
#define EACH_NONNULL(expr, E) EACH_BAD_FROM(1, expr, E)
#define EACH_BAD_FROM(first, expr, E)                                         \
    do {                                                                      \
        for (int i_ = (first); i_ < nbad; i_++) {                             \
            void *P = bad[i_];                                                \
            (void)P;                                                          \
            errno = 0;                                                        \
            long r_ = (expr);                                                 \
            int e_ = errno;                                                   \
            if (r_ != -1 || e_ != (E))                                        \
                FAILF("%s with P=%p (got ret %ld errno %d %s, want -1 errno " \
                      "%d %s)",                                               \
                      #expr, P, r_, e_, strerror(e_), (int)(E),              \
                      strerror(E));                                           \
        }                                                                     \
    } while (0)

int main(void) {
    /* The bad pointer set. */
    /* Three pages: PROT_NONE | unmapped hole | PROT_READ (kept mapped so
     * nothing else lands in the hole). */
    unsigned char *three = mmap(NULL, 3 * PG, PROT_NONE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(three != MAP_FAILED);
    unsigned char *none = three, *hole = three + PG, *ro = three + 2 * PG;
    CHECK_OK(munmap(hole, PG));
    CHECK_OK(mprotect(ro, PG, PROT_READ));
    bad[nbad++] = NULL;
    bad[nbad++] = (void *)1;                  /* NULL + 1 */
    bad[nbad++] = (void *)0xdeadbeef000UL;    /* unmapped user address */
    bad[nbad++] = (void *)-4096L;             /* kernel half */
    bad[nbad++] = (void *)(1UL << 47);        /* first non-canonical */
    bad[nbad++] = hole;
    bad[nbad++] = none;
    {
        unsigned char v;
        CHECK_ERR(mincore((void *)0xdeadbeef000UL, PG, &v), ENOMEM);
        CHECK_ERR(mincore(hole, PG, &v), ENOMEM);
    }

    const char *file = scratch_path("file");
    const char *dir = scratch_path("dir");
    const char *lnk = scratch_path("lnk");
    int fd = CHECK_OK(open(file, O_CREAT | O_RDWR, 0644));
    static char data[3 * 4096];
    memset(data, 'd', sizeof data);
    CHECK_EQ(write(fd, data, sizeof data), sizeof data);
    CHECK_OK(mkdir(dir, 0755));
    CHECK_OK(symlink("file", lnk));
    int zero = CHECK_OK(open("/dev/zero", O_RDONLY));
    int p[2];
    CHECK_OK(pipe(p));
    int dfd = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
    char buf[256];
    struct stat st;

    /* read/write/pread/pwrite with a bad buffer. */
    EACH_BAD(syscall(SYS_read, zero, P, 16), EFAULT);
    /* at EOF a regular-file read returns 0 without touching a user-half
     * buffer; a kernel-half one still fails access_ok first. */
    CHECK_EQ(syscall(SYS_read, fd, NULL, 16), 0);
    CHECK_EQ(syscall(SYS_read, fd, hole, 16), 0);
    CHECK_ERR(syscall(SYS_read, fd, (void *)-4096L, 16), EFAULT);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    EACH_BAD(syscall(SYS_read, fd, P, 16), EFAULT);
    CHECK_EQ(lseek(fd, 0, SEEK_CUR), 0); /* offset unchanged */
    EACH_BAD(syscall(SYS_pread64, fd, P, 16, 0L), EFAULT);
    EACH_BAD(syscall(SYS_write, p[1], P, 16), EFAULT);
    EACH_BAD(syscall(SYS_pwrite64, fd, P, 16, 0L), EFAULT);
    EACH_BAD(syscall(SYS_write, fd, P, 16), EFAULT);
    /* output into a read-only page also faults. */
    CHECK_ERR(syscall(SYS_read, zero, ro, 16), EFAULT);
    CHECK_ERR(syscall(SYS_pread64, fd, ro, 16, 0L), EFAULT);
    /* the bad-fd check comes first. */
    CHECK_ERR(syscall(SYS_read, 9999, NULL, 16), EBADF);
    CHECK_ERR(syscall(SYS_write, 9999, NULL, 16), EBADF);
    /* a zero-length transfer does not touch a user-half buffer... */
    CHECK_EQ(syscall(SYS_read, zero, (void *)1, 0), 0);
    CHECK_EQ(syscall(SYS_write, p[1], (void *)1, 0), 0);
    /* ...but a kernel-half address fails access_ok even with length 0. */
    CHECK_ERR(syscall(SYS_read, zero, (void *)-4096L, 0), EFAULT);
    CHECK_ERR(syscall(SYS_write, p[1], (void *)-4096L, 0), EFAULT);
    /* nothing reached the pipe or the file. */
    {
        int fl = fcntl(p[0], F_GETFL);
        CHECK_OK(fcntl(p[0], F_SETFL, fl | O_NONBLOCK));
        CHECK_ERR(read(p[0], buf, sizeof buf), EAGAIN);
        CHECK_OK(fcntl(p[0], F_SETFL, fl));
        CHECK_OK(fstat(fd, &st));
        CHECK_EQ(st.st_size, sizeof data);
    }
    /* partial transfers: a buffer whose second page is unmapped. */
    {
        unsigned char *two = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(two != MAP_FAILED);
        CHECK_OK(munmap(two + PG, PG));
        CHECK_EQ(syscall(SYS_read, zero, two, 2 * PG), PG);
        CHECK_EQ(syscall(SYS_pread64, fd, two, 2 * PG, 0L), PG);
        memset(two, 'w', PG);
        CHECK_EQ(syscall(SYS_pwrite64, fd, two + PG - 10, 100, 0L), 10);
        CHECK_EQ(pread(fd, buf, 11, 0), 11);
        CHECK_MEM(buf, "wwwwwwwwwwd", 11);
        CHECK_OK(munmap(two, PG));
    }

    /* readv/writev with a bad iovec array, or a bad base inside it. */
    EACH_BAD(syscall(SYS_readv, zero, P, 1), EFAULT);
    EACH_BAD(syscall(SYS_writev, p[1], P, 1), EFAULT);
    {
        struct iovec iov[2] = {{buf, 8}, {NULL, 8}};
        /* first element good, second bad: partial count, like Linux. */
        for (int i = 0; i < nbad; i++) {
            iov[1].iov_base = bad[i];
            /* a kernel-half base fails the up-front access_ok of the
             * whole iovec instead. (1<<47 is skipped: whether it passes
             * access_ok depends on 4- vs 5-level paging.) */
            if (bad[i] == (void *)(1UL << 47))
                continue;
            if ((uintptr_t)bad[i] > (1UL << 47))
                CHECK_ERR(syscall(SYS_readv, zero, iov, 2), EFAULT);
            else
                CHECK_EQ(syscall(SYS_readv, zero, iov, 2), 8);
        }
        iov[0].iov_base = NULL;
        CHECK_ERR(syscall(SYS_readv, zero, iov, 2), EFAULT);
        CHECK_ERR(syscall(SYS_writev, p[1], iov, 2), EFAULT);
        CHECK_ERR(syscall(SYS_readv, zero, iov, -1), EINVAL);
        CHECK_ERR(syscall(SYS_readv, zero, iov, 1025), EINVAL);
    }

    /* path arguments. */
    EACH_BAD(syscall(SYS_open, P, O_RDONLY), EFAULT);
    EACH_BAD(syscall(SYS_openat, AT_FDCWD, P, O_RDONLY), EFAULT);
    EACH_BAD(syscall(SYS_stat, P, &st), EFAULT);
    EACH_BAD(syscall(SYS_lstat, P, &st), EFAULT);
    EACH_BAD(syscall(SYS_newfstatat, AT_FDCWD, P, &st, 0), EFAULT);
    EACH_BAD(syscall(SYS_access, P, F_OK), EFAULT);
    EACH_BAD(syscall(SYS_faccessat, AT_FDCWD, P, F_OK), EFAULT);
    EACH_BAD(syscall(SYS_mkdir, P, 0755), EFAULT);
    EACH_BAD(syscall(SYS_unlink, P), EFAULT);
    EACH_BAD(syscall(SYS_rmdir, P), EFAULT);
    EACH_BAD(syscall(SYS_readlink, P, buf, sizeof buf), EFAULT);
    EACH_BAD(syscall(SYS_chdir, P), EFAULT);
    EACH_BAD(syscall(SYS_rename, P, "x"), EFAULT);
    EACH_BAD(syscall(SYS_rename, file, P), EFAULT);
    EACH_BAD(syscall(SYS_symlink, P, "x"), EFAULT);
    EACH_BAD(syscall(SYS_execve, P, NULL, NULL), EFAULT);
    EACH_BAD(syscall(SYS_statfs, P, buf), EFAULT);
    /* an empty path is ENOENT, not EFAULT. */
    CHECK_ERR(syscall(SYS_open, "", O_RDONLY), ENOENT);
    /* output buffers of path calls. */
    EACH_BAD(syscall(SYS_stat, file, P), EFAULT);
    EACH_BAD(syscall(SYS_lstat, file, P), EFAULT);
    EACH_BAD(syscall(SYS_readlink, lnk, P, 64), EFAULT);
    CHECK_ERR(syscall(SYS_readlink, lnk, ro, 64), EFAULT);
    /* readlink checks bufsiz before anything else... */
    CHECK_ERR(syscall(SYS_readlink, lnk, NULL, 0), EINVAL);
    /* ...and the target type before the buffer. */
    CHECK_ERR(syscall(SYS_readlink, file, NULL, 64), EINVAL);
    /* a missing path wins over a bad output buffer. */
    CHECK_ERR(syscall(SYS_stat, scratch_path("missing"), NULL), ENOENT);

    /* fstat / statx. */
    EACH_BAD(syscall(SYS_fstat, fd, P), EFAULT);
    CHECK_ERR(syscall(SYS_fstat, fd, ro), EFAULT);
    CHECK_ERR(syscall(SYS_fstat, 9999, NULL), EBADF);
    {
        char sx[256];
        EACH_BAD(syscall(SYS_statx, AT_FDCWD, P, 0, 0x7ffU, sx), EFAULT);
        EACH_BAD(syscall(SYS_statx, AT_FDCWD, file, 0, 0x7ffU, P), EFAULT);
        /* invalid flags are rejected before anything is touched. */
        CHECK_ERR(syscall(SYS_statx, AT_FDCWD, file, 0x80000000U, 0x7ffU,
                          NULL),
                  EINVAL);
    }

    /* plain output structs. */
    EACH_BAD(syscall(SYS_uname, P), EFAULT);
    CHECK_ERR(syscall(SYS_uname, ro), EFAULT);
    EACH_BAD(syscall(SYS_sysinfo, P), EFAULT);
    EACH_BAD(syscall(SYS_getrandom, P, 16, 0), EFAULT);
    CHECK_ERR(syscall(SYS_getrandom, ro, 16, 0), EFAULT);
    EACH_BAD(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, P), EFAULT);
    EACH_BAD(syscall(SYS_clock_gettime, CLOCK_REALTIME, P), EFAULT);
    /* clock id is checked first. */
    CHECK_ERR(syscall(SYS_clock_gettime, 12345, NULL), EINVAL);
    EACH_NONNULL(syscall(SYS_clock_getres, CLOCK_MONOTONIC, P), EFAULT);
    CHECK_EQ(syscall(SYS_clock_getres, CLOCK_MONOTONIC, NULL), 0);
    EACH_NONNULL(syscall(SYS_gettimeofday, P, NULL), EFAULT);
    CHECK_EQ(syscall(SYS_gettimeofday, NULL, NULL), 0);
    EACH_BAD(syscall(SYS_pipe2, P, 0), EFAULT);
    EACH_BAD(syscall(SYS_pipe, P), EFAULT);
    CHECK_ERR(syscall(SYS_pipe2, NULL, 0x1), EINVAL); /* flags first */
    EACH_BAD(syscall(SYS_getcwd, P, 4096), EFAULT);
    CHECK_ERR(syscall(SYS_getcwd, NULL, 1), ERANGE); /* size first */
    EACH_BAD(syscall(SYS_getdents64, dfd, P, 4096), EFAULT);
    EACH_BAD(syscall(SYS_getrlimit, RLIMIT_NOFILE, P), EFAULT);
    EACH_NONNULL(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, P), EFAULT);
    EACH_NONNULL(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, P, NULL), EFAULT);
    CHECK_EQ(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, NULL), 0);
    EACH_BAD(syscall(SYS_setrlimit, RLIMIT_NOFILE, P), EFAULT);
    EACH_BAD(syscall(SYS_sched_getaffinity, 0, 128, P), EFAULT);
    EACH_BAD(syscall(SYS_getresuid, P, P, P), EFAULT);
    EACH_BAD(syscall(SYS_getrusage, RUSAGE_SELF, P), EFAULT);
    /* times(2): NULL is allowed (returns the tick count). */
    EACH_NONNULL(syscall(SYS_times, P), EFAULT);
    CHECK(syscall(SYS_times, NULL) != -1);

    /* signals. */
    /* (NULL act / oldact mean "not given" for these.) */
    EACH_NONNULL(syscall(SYS_rt_sigaction, SIGUSR1, P, NULL, 8), EFAULT);
    EACH_NONNULL(syscall(SYS_rt_sigaction, SIGUSR1, NULL, P, 8), EFAULT);
    /* the act struct is copied in before the signal number is vetted. */
    EACH_NONNULL(syscall(SYS_rt_sigaction, SIGKILL, P, NULL, 8), EFAULT);
    EACH_NONNULL(syscall(SYS_rt_sigaction, 65, P, NULL, 8), EFAULT);
    {
        struct sigaction k;
        memset(&k, 0, sizeof k);
        k.sa_handler = SIG_IGN;
        CHECK_ERR(syscall(SYS_rt_sigaction, SIGKILL, &k, NULL, 8), EINVAL);
        CHECK_ERR(syscall(SYS_rt_sigaction, 65, &k, NULL, 8), EINVAL);
    }
    /* querying SIGKILL's disposition is allowed. */
    CHECK_EQ(syscall(SYS_rt_sigaction, SIGKILL, NULL, NULL, 8), 0);
    /* the sigset size is checked before anything else. */
    CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, (void *)1, NULL, 4), EINVAL);
    CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, NULL, NULL, 4), EINVAL);
    EACH_NONNULL(syscall(SYS_rt_sigprocmask, SIG_BLOCK, P, NULL, 8), EFAULT);
    EACH_NONNULL(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, P, 8), EFAULT);
    EACH_NONNULL(syscall(SYS_sigaltstack, P, NULL), EFAULT);
    EACH_BAD(syscall(SYS_rt_sigpending, P, 8), EFAULT);
    /* SIGUSR1's disposition is untouched by the failed calls. */
    {
        struct sigaction sa;
        CHECK_OK(sigaction(SIGUSR1, NULL, &sa));
        CHECK(sa.sa_handler == SIG_DFL);
    }

    /* time. */
    EACH_BAD(syscall(SYS_nanosleep, P, NULL), EFAULT);
    EACH_BAD(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, P, NULL),
             EFAULT);
    /* clock_nanosleep returns the error number instead of setting errno. */
    {
        struct timespec ts = {0, 1000};
        CHECK_EQ(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL),
                 0);
    }

    /* poll / select / wait. */
    EACH_BAD(syscall(SYS_poll, P, 1, 0), EFAULT);
    CHECK_EQ(syscall(SYS_poll, NULL, 0, 0), 0); /* nfds 0: nothing read */
    EACH_NONNULL(syscall(SYS_select, 1, P, NULL, NULL, NULL), EFAULT);
    /* with no children, ECHILD wins over the bad status pointer. */
    EACH_BAD(syscall(SYS_wait4, -1, P, WNOHANG, NULL), ECHILD);
    /* futex on a bad address. */
    /* futex: a misaligned address is EINVAL before any access. */
    for (int i = 0; i < nbad; i++) {
        long want = (uintptr_t)bad[i] % 4 ? EINVAL : EFAULT;
        CHECK_ERR(syscall(SYS_futex, bad[i], 0 /* FUTEX_WAIT */, 0, NULL,
                          NULL, 0),
                  want);
    }

    /* everything still works afterwards. */
    CHECK_EQ(pread(fd, buf, 4, 100), 4);
    CHECK_MEM(buf, "dddd", 4);
    CHECK_OK(close(fd));
    CHECK_OK(close(zero));
    CHECK_OK(close(dfd));
    CHECK_OK(close(p[0]));
    CHECK_OK(close(p[1]));
    return 0;
}
