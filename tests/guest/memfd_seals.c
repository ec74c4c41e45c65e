/* memfd_seals.c — file seals of memfd and tmpfs files as Linux's shmem:
 * F_GET_SEALS/F_ADD_SEALS, F_SEAL_SEAL by default, F_SEAL_GROW and
 * F_SEAL_SHRINK against truncate, writes (refused page by page) and
 * fallocate, F_SEAL_WRITE against writes, hole punches and shared
 * writable mappings (EBUSY while one may write), seals per inode, a
 * read-only descriptor (EPERM), MFD_NOEXEC_SEAL. */
#include "check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define PG 4096L
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 8
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x20
#endif

static int memfd(unsigned flags) {
    return CHECK_OK(syscall(SYS_memfd_create, "seals", flags));
}

static void reopen_path(int fd, char *buf, size_t n) {
    snprintf(buf, n, "/proc/self/fd/%d", fd);
}

int main(void) {
    char page[2 * PG];
    memset(page, 'x', sizeof page);

    /* Without MFD_ALLOW_SEALING: F_SEAL_SEAL. */
    int plain = memfd(0);
    CHECK_EQ(fcntl(plain, F_GET_SEALS), F_SEAL_SEAL);
    CHECK_ERR(fcntl(plain, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
    close(plain);

    /* A tmpfs file (/dev/shm) has F_SEAL_SEAL; a pipe no seals at all. */
    char shm[64];
    snprintf(shm, sizeof shm, "/dev/shm/memfd_seals.%d", getpid());
    int t = CHECK_OK(open(shm, O_CREAT | O_EXCL | O_RDWR, 0600));
    CHECK_OK(unlink(shm));
    CHECK_EQ(fcntl(t, F_GET_SEALS), F_SEAL_SEAL);
    close(t);
    int pfd[2];
    CHECK_OK(pipe(pfd));
    CHECK_ERR(fcntl(pfd[0], F_GET_SEALS), EINVAL);
    CHECK_ERR(fcntl(pfd[1], F_ADD_SEALS, F_SEAL_GROW), EINVAL);

    int fd = memfd(MFD_ALLOW_SEALING);
    CHECK_EQ(fcntl(fd, F_GET_SEALS), 0);
    CHECK_ERR(fcntl(fd, F_ADD_SEALS, 0x40), EINVAL);
    /* The argument is an unsigned int: the high bits are dropped. */
    CHECK_OK(syscall(SYS_fcntl, fd, F_ADD_SEALS, 1L << 32));
    CHECK_OK(ftruncate(fd, PG));

    /* A shared mapping that may write (even PROT_READ) blocks F_SEAL_WRITE,
     * and nothing of a refused call is applied. */
    void *m = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    CHECK_ERR(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW), EBUSY);
    CHECK_EQ(fcntl(fd, F_GET_SEALS), 0);
    CHECK_OK(munmap(m, PG));
    /* A private mapping does not. */
    void *priv = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    CHECK(priv != MAP_FAILED);

    /* F_SEAL_GROW */
    CHECK_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW));
    CHECK_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_GROW);
    CHECK_ERR(ftruncate(fd, 2 * PG), EPERM);
    /* A write that would grow the file stores the pages before the one
     * that would; none of a page that would (EPERM). */
    CHECK_EQ(pwrite(fd, page, PG, PG * 3 / 4), PG / 4);
    CHECK_ERR(pwrite(fd, page, PG / 2, PG), EPERM);
    CHECK_EQ(pwrite(fd, page, PG / 4, PG * 3 / 4), PG / 4);
    CHECK_ERR(fallocate(fd, 0, 0, 2 * PG), EPERM);
    CHECK_EQ(pwrite(fd, page, 0, 2 * PG), 0);
    CHECK_OK(ftruncate(fd, PG / 2));
    CHECK_ERR(ftruncate(fd, PG), EPERM);

    /* F_SEAL_SHRINK */
    CHECK_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
    CHECK_ERR(ftruncate(fd, 0), EPERM);
    CHECK_OK(ftruncate(fd, PG / 2));

    /* Seals belong to the inode: a second descriptor sees them, and a
     * read-only one cannot add any. */
    char path[64];
    reopen_path(fd, path, sizeof path);
    int ro = CHECK_OK(open(path, O_RDONLY));
    CHECK_EQ(fcntl(ro, F_GET_SEALS), F_SEAL_GROW | F_SEAL_SHRINK);
    CHECK_ERR(fcntl(ro, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
    int rw = CHECK_OK(open(path, O_RDWR));
    CHECK_ERR(ftruncate(rw, PG), EPERM);

    /* F_SEAL_WRITE */
    CHECK_OK(fcntl(rw, F_ADD_SEALS, F_SEAL_WRITE));
    CHECK_ERR(write(fd, page, 1), EPERM);
    CHECK_EQ(write(fd, page, 0), 0);
    CHECK_ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PG), EPERM);
    CHECK(mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
    CHECK_EQ(errno, EPERM);
    void *r = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(r != MAP_FAILED);
    CHECK_ERR(mprotect(r, PG, PROT_READ | PROT_WRITE), EACCES);
    CHECK_OK(munmap(r, PG));
    CHECK(mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0) != MAP_FAILED);

    /* F_SEAL_SEAL ends it. */
    CHECK_OK(fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL));
    CHECK_ERR(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), EPERM);
    CHECK_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_SEAL | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_WRITE);

    /* A shared mapping through a read-only descriptor may never write, so
     * it does not block F_SEAL_WRITE. */
    int fd2 = memfd(MFD_ALLOW_SEALING);
    CHECK_OK(ftruncate(fd2, PG));
    reopen_path(fd2, path, sizeof path);
    int ro2 = CHECK_OK(open(path, O_RDONLY));
    void *rm = mmap(NULL, PG, PROT_READ, MAP_SHARED, ro2, 0);
    CHECK(rm != MAP_FAILED);
    CHECK_ERR(mprotect(rm, PG, PROT_READ | PROT_WRITE), EACCES);
    CHECK_OK(fcntl(fd2, F_ADD_SEALS, F_SEAL_WRITE));

    /* F_SEAL_GROW refuses a write page by page. */
    int big = memfd(MFD_ALLOW_SEALING);
    CHECK_OK(ftruncate(big, 2 * PG + PG / 2));
    CHECK_OK(fcntl(big, F_ADD_SEALS, F_SEAL_GROW));
    static char chunk[4 * PG];
    CHECK_EQ(pwrite(big, chunk, 4 * PG, PG / 2), 3 * PG / 2);

    /* MFD_NOEXEC_SEAL: mode 0666 with F_SEAL_EXEC. */
    int nx = memfd(MFD_NOEXEC_SEAL);
    CHECK_EQ(fcntl(nx, F_GET_SEALS), F_SEAL_EXEC);
    struct stat st;
    CHECK_OK(fstat(nx, &st));
    CHECK_EQ(st.st_mode & 0777, 0666);
    CHECK_ERR(fchmod(nx, 0755), EPERM);
    CHECK_OK(fchmod(nx, 0600));
    puts("memfd_seals: ok");
    return 0;
}
