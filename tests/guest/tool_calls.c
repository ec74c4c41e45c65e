/* tool_calls.c — small system calls agents' tools reach for, checked
 * against Linux's argument rules: readahead(2) (a readable regular file;
 * the count as a signed length), mlock2(2) (MLOCK_ONFAULT the only flag,
 * every page mapped), sched_rr_get_interval(2) (the target's checks, a
 * timespec below one second) and syslog(2)'s non-blocking actions. */
#include "check.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

static void check_readahead(void) {
    const char *path = scratch_path("data");
    int fd = CHECK_OK(open(path, O_RDWR | O_CREAT, 0600));
    char block[8192];
    memset(block, 'r', sizeof block);
    CHECK_EQ(write(fd, block, sizeof block), (ssize_t)sizeof block);
    int rd = CHECK_OK(open(path, O_RDONLY));
    CHECK_OK(readahead(rd, 0, 4096));
    CHECK_OK(readahead(fd, 4096, 1 << 20));
    CHECK_OK(readahead(rd, 1L << 40, 4096)); /* past the end */
    CHECK_OK(readahead(rd, -1, 4096));       /* any offset */
    CHECK_ERR(readahead(rd, 0, (size_t)-1), EINVAL);

    int wr = CHECK_OK(open(path, O_WRONLY));
    CHECK_ERR(readahead(wr, 0, 10), EBADF);
    int opath = CHECK_OK(open(path, O_PATH));
    CHECK_ERR(readahead(opath, 0, 10), EBADF);
    CHECK_ERR(readahead(-1, 0, 10), EBADF);
    int dir = CHECK_OK(open(scratch_dir(), O_RDONLY | O_DIRECTORY));
    CHECK_ERR(readahead(dir, 0, 10), EINVAL);
    int p[2];
    CHECK_OK(pipe(p));
    CHECK_ERR(readahead(p[0], 0, 10), EINVAL);
    close(p[0]);
    close(p[1]);
    close(dir);
    close(opath);
    close(wr);
    close(rd);
    close(fd);
}

static void check_mlock2(void) {
    char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    CHECK_OK(syscall(SYS_mlock2, m, 8192, 0));
    CHECK_OK(syscall(SYS_mlock2, m, 8192, MLOCK_ONFAULT));
    CHECK_OK(syscall(SYS_mlock2, m + 1, 100, 0)); /* rounded to pages */
    CHECK_ERR(syscall(SYS_mlock2, m, 8192, 2), EINVAL);
    CHECK_OK(munlock(m, 8192));
    CHECK_OK(munmap(m + 4096, 4096));
    CHECK_ERR(syscall(SYS_mlock2, m, 8192, 0), ENOMEM); /* a hole */
    CHECK_ERR(syscall(SYS_mlock2, m, 8192, 3), EINVAL); /* flags first */
    CHECK_OK(munmap(m, 4096));
}

static void check_rr_interval(void) {
    struct timespec ts = {-1, -1};
    CHECK_OK(sched_rr_get_interval(0, &ts));
    CHECK(ts.tv_sec == 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
    ts.tv_sec = -1;
    CHECK_OK(sched_rr_get_interval(getpid(), &ts));
    CHECK(ts.tv_sec == 0);
    CHECK_ERR(sched_rr_get_interval(-1, &ts), EINVAL);
    CHECK_ERR(sched_rr_get_interval(0, (struct timespec *)8), EFAULT);
    /* A pid that names no one: above every pid this system hands out. */
    CHECK_ERR(sched_rr_get_interval(0x3fffffff, &ts), ESRCH);
}

static void check_syslog(void) {
    enum { CLOSE, OPEN, READ, READ_ALL, READ_CLEAR, CLEAR, CONSOLE_OFF, CONSOLE_ON,
           CONSOLE_LEVEL, SIZE_UNREAD, SIZE_BUFFER };
    char buf[256];
    CHECK(klogctl(SIZE_BUFFER, NULL, 0) > 0);
    if (geteuid() != 0)
        return; /* the rest needs CAP_SYSLOG (or dmesg_restrict 0) */
    int n = CHECK_OK(klogctl(READ_ALL, buf, sizeof buf));
    CHECK(n <= (int)sizeof buf);
    CHECK_EQ(klogctl(READ_ALL, buf, 0), 0);
    CHECK_ERR(klogctl(READ_ALL, NULL, 10), EINVAL);
    CHECK_ERR(klogctl(READ_ALL, buf, -1), EINVAL);
    CHECK_ERR(klogctl(READ, NULL, 10), EINVAL);
    CHECK_ERR(klogctl(READ_CLEAR, buf, -1), EINVAL);
    CHECK_EQ(klogctl(READ, buf, 0), 0); /* nothing asked: no wait */
    CHECK(klogctl(SIZE_UNREAD, NULL, 0) >= 0);
    CHECK_OK(klogctl(OPEN, NULL, 0));
    CHECK_OK(klogctl(CLOSE, NULL, 0));
    CHECK_ERR(klogctl(CONSOLE_LEVEL, NULL, 0), EINVAL);
    CHECK_ERR(klogctl(CONSOLE_LEVEL, NULL, 9), EINVAL);
    CHECK_ERR(klogctl(99, NULL, 0), EINVAL);
    CHECK_ERR(klogctl(-1, NULL, 0), EINVAL);
}

int main(void) {
    check_readahead();
    check_mlock2();
    check_rr_interval();
    check_syslog();
    puts("tool_calls: ok");
    return 0;
}
