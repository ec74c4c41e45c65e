/* mmap_edges.c — address-space corner cases as Linux: shared mappings of
 * /dev/zero (shared anonymous memory), file offsets past MAX_LFS_FILESIZE
 * (EOVERFLOW), O_PATH descriptors (EBADF), MAP_32BIT placement,
 * RLIMIT_AS and RLIMIT_DATA, madvise's fork advice (MADV_DONTFORK,
 * MADV_WIPEONFORK) and argument checks, msync over holes. */
#include "check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define PG 4096L

static void *map(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static pid_t child(void) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    return pid;
}

static void reap(pid_t pid, int want_status) {
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK_EQ(st, want_status);
}

/* Whether `p` is mapped (mincore answers ENOMEM where nothing is). */
static int mapped(void *p) {
    unsigned char v;
    if (mincore(p, PG, &v) == 0)
        return 1;
    CHECK_EQ(errno, ENOMEM);
    return 0;
}

/* VmSize of /proc/self/status, in bytes. */
static rlim_t vm_size(void) {
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld kB", &kb) == 1)
            break;
    fclose(f);
    CHECK(kb > 0);
    return (rlim_t)kb * 1024;
}

static void limits(void) {
    struct rlimit r = {0, RLIM_INFINITY};
    /* RLIMIT_DATA: brk cannot grow (glibc's brk says ENOMEM). */
    void *cur = sbrk(0);
    CHECK_OK(setrlimit(RLIMIT_DATA, &r));
    CHECK_ERR(brk((char *)cur + 8192), ENOMEM);
    r.rlim_cur = RLIM_INFINITY;
    CHECK_OK(setrlimit(RLIMIT_DATA, &r));
    CHECK_OK(brk((char *)cur + 8192));
    /* RLIMIT_AS bounds all mappings, what MAP_FIXED replaces counted as
     * freed. */
    char *a = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(a != MAP_FAILED);
    CHECK_OK(munmap(a + 2 * PG, 2 * PG));
    r.rlim_cur = vm_size();
    CHECK_OK(setrlimit(RLIMIT_AS, &r));
    CHECK(mmap(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED);
    CHECK_EQ(errno, ENOMEM);
    CHECK(mremap(a, PG, 2 * PG, MREMAP_MAYMOVE) == MAP_FAILED);
    CHECK_EQ(errno, ENOMEM);
    /* At the limit: replacing keeps the size. */
    CHECK(mmap(a, 2 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == a);
    CHECK(mmap(a, 3 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED);
    CHECK_EQ(errno, ENOMEM);
}

int main(void) {
    /* /dev/zero shared: one shared anonymous memory for parent and child. */
    int zero = CHECK_OK(open("/dev/zero", O_RDWR));
    char *z = mmap(NULL, PG + 100, PROT_READ | PROT_WRITE, MAP_SHARED, zero, 0);
    CHECK(z != MAP_FAILED);
    CHECK_EQ(z[0], 0);
    pid_t pid = child();
    if (pid == 0) {
        z[0] = 'c';
        z[PG + 50] = 'd';
        _exit(0);
    }
    reap(pid, 0);
    CHECK_EQ(z[0], 'c');
    CHECK_EQ(z[PG + 50], 'd');
    /* A second mapping of the same descriptor is fresh memory. */
    char *z2 = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, zero, 0);
    CHECK(z2 != MAP_FAILED && z2[0] == 0);
    /* Private: a child's stores stay its own. */
    char *zp = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, zero, 0);
    CHECK(zp != MAP_FAILED);
    if ((pid = child()) == 0) {
        zp[0] = 'c';
        _exit(0);
    }
    reap(pid, 0);
    CHECK_EQ(zp[0], 0);

    /* Offsets: a regular file's end must be a valid offset, /dev/zero's
     * need not; anonymous mappings ignore it. */
    scratch_dir();
    int fd = CHECK_OK(open(scratch_path("f"), O_CREAT | O_RDWR, 0644));
    CHECK_OK(ftruncate(fd, PG));
    off_t last = INT64_MAX & ~(PG - 1);
    CHECK(map(NULL, PG, PROT_READ, MAP_SHARED, fd, last - PG) != MAP_FAILED);
    CHECK_EQ((long)map(NULL, PG, PROT_READ, MAP_SHARED, fd, last), -1);
    CHECK_EQ(errno, EOVERFLOW);
    CHECK_EQ((long)map(NULL, PG, PROT_READ, MAP_PRIVATE, fd, INT64_MIN), -1);
    CHECK_EQ(errno, EOVERFLOW);
    CHECK_EQ((long)map(NULL, PG, PROT_READ, MAP_SHARED, fd, -PG), -1);
    CHECK_EQ(errno, EOVERFLOW);
    CHECK(map(NULL, PG, PROT_READ, MAP_PRIVATE, zero, -2 * PG) != MAP_FAILED);
    CHECK(map(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, -PG) != MAP_FAILED);
    CHECK_EQ((long)map(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 100), -1);
    CHECK_EQ(errno, EINVAL);

    /* O_PATH is no file to map. */
    int opath = CHECK_OK(open(scratch_path("f"), O_PATH));
    CHECK(mmap(NULL, PG, PROT_READ, MAP_PRIVATE, opath, 0) == MAP_FAILED);
    CHECK_EQ(errno, EBADF);

    /* MAP_32BIT: below 2 GiB. */
    char *low = mmap(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    CHECK(low != MAP_FAILED);
    CHECK((uintptr_t)low + PG <= 0x80000000UL);

    /* madvise's arguments. */
    char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    CHECK_ERR(madvise(m + 1, PG, MADV_DONTFORK), EINVAL);
    CHECK_ERR(madvise(NULL, SIZE_MAX - PG / 2, MADV_DONTFORK), EINVAL);
    CHECK_ERR(madvise(m, PG, 12345), EINVAL);
    CHECK_OK(madvise(m, 0, MADV_DONTFORK));
    CHECK_OK(madvise(m, 1, MADV_NORMAL));

    /* MADV_DONTFORK: the child has no such page; MADV_WIPEONFORK: the
     * child's reads zeros; the parent keeps both. */
    memset(m, 1, PG);
    memset(m + PG, 2, PG);
    memset(m + 2 * PG, 3, PG);
    CHECK_OK(madvise(m + PG, PG, MADV_DONTFORK));
    CHECK_OK(madvise(m + 2 * PG, PG, MADV_WIPEONFORK));
    CHECK_ERR(madvise(z, PG, MADV_WIPEONFORK), EINVAL);
    if ((pid = child()) == 0) {
        if (!mapped(m) || m[0] != 1 || mapped(m + PG) || !mapped(m + 2 * PG) || m[2 * PG] != 0)
            _exit(1);
        m[0] = 11;
        /* WIPEONFORK is inherited. */
        pid_t g = fork();
        if (g == 0)
            _exit(m[2 * PG] == 0 && m[0] == 11 ? 0 : 1);
        int st;
        waitpid(g, &st, 0);
        _exit(st == 0 ? 0 : 2);
    }
    reap(pid, 0);
    CHECK(m[0] == 1 && m[PG] == 2 && m[2 * PG] == 3);
    CHECK_OK(madvise(m + PG, PG, MADV_DOFORK));
    CHECK_OK(madvise(m + 2 * PG, PG, MADV_KEEPONFORK));
    if ((pid = child()) == 0)
        _exit(mapped(m + PG) && m[PG] == 2 && m[2 * PG] == 3 ? 0 : 1);
    reap(pid, 0);
    /* A hole: ENOMEM, the mapped part advised. */
    CHECK_OK(munmap(m + PG, PG));
    CHECK_ERR(madvise(m, 3 * PG, MADV_DONTFORK), ENOMEM);
    if ((pid = child()) == 0)
        _exit(mapped(m) ? 1 : 0);
    reap(pid, 0);

    /* msync: a hole is ENOMEM. */
    CHECK_ERR(msync(m, 3 * PG, MS_SYNC), ENOMEM);
    CHECK_ERR(msync(m, 3 * PG, MS_ASYNC), ENOMEM);
    CHECK_OK(msync(m, PG, MS_ASYNC));
    CHECK_OK(msync(NULL, 0, MS_ASYNC));
    CHECK_ERR(msync(NULL, PG, MS_ASYNC), ENOMEM);

    if ((pid = child()) == 0) {
        limits();
        _exit(0);
    }
    reap(pid, 0);
    puts("mmap_edges: ok");
    return 0;
}
