/* memory.c — mmap/munmap/mprotect/mremap/brk/madvise. */
#include "check.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define PG 4096UL

static int all_bytes(const void *p, size_t n, unsigned char v) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != v)
            return 0;
    return 1;
}

static sigjmp_buf jb;
static volatile void *fault_addr;
static volatile int fault_code;

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig; (void)uc;
    fault_addr = si->si_addr;
    fault_code = si->si_code;
    siglongjmp(jb, 1);
}

int main(void) {
    /* anonymous private: zero-filled, writable. */
    size_t len = 16 * PG;
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    CHECK_EQ((uintptr_t)p % PG, 0);
    CHECK(all_bytes(p, len, 0));
    memset(p, 0xab, len);
    CHECK(all_bytes(p, len, 0xab));

    /* madvise(MADV_DONTNEED) on private anon → zero page on next touch. */
    CHECK_OK(madvise(p + PG, PG, MADV_DONTNEED));
    CHECK(all_bytes(p + PG, PG, 0));
    CHECK(all_bytes(p, PG, 0xab));
    CHECK(all_bytes(p + 2 * PG, PG, 0xab));
    CHECK_ERR(madvise(p + 1, PG, MADV_DONTNEED), EINVAL);

    /* mprotect to PROT_READ: reads still work; a write faults with
     * SEGV_ACCERR at the exact address. */
    CHECK_OK(mprotect(p, PG, PROT_READ));
    CHECK_EQ(p[10], 0xab);
    {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO;
        CHECK_OK(sigaction(SIGSEGV, &sa, &old));
        if (sigsetjmp(jb, 1) == 0) {
            ((volatile unsigned char *)p)[100] = 1;
            FAILF("write to a PROT_READ page did not fault");
        }
        CHECK(fault_addr == p + 100);
        CHECK_EQ(fault_code, SEGV_ACCERR);
        CHECK_OK(sigaction(SIGSEGV, &old, NULL));
    }
    CHECK_EQ(p[100], 0xab);
    CHECK_OK(mprotect(p, PG, PROT_READ | PROT_WRITE));
    p[100] = 7;
    CHECK_EQ(p[100], 7);
    CHECK_ERR(mprotect(p + 1, PG, PROT_READ), EINVAL);

    /* mremap grow with MREMAP_MAYMOVE keeps contents. */
    unsigned char *q = mremap(p, len, 256 * PG, MREMAP_MAYMOVE);
    CHECK(q != MAP_FAILED);
    CHECK_EQ(q[100], 7);
    CHECK(all_bytes(q + PG, PG, 0));
    CHECK(all_bytes(q + 2 * PG, len - 2 * PG, 0xab));
    CHECK(all_bytes(q + len, 256 * PG - len, 0)); /* new part zero */
    /* shrink in place. */
    CHECK(mremap(q, 256 * PG, 2 * PG, 0) == q);
    CHECK_EQ(q[100], 7);
    CHECK_ERR((long)mremap(q + 1, PG, 2 * PG, MREMAP_MAYMOVE), EINVAL);
    CHECK_OK(munmap(q, 2 * PG));

    /* MAP_SHARED|MAP_ANONYMOUS. */
    unsigned char *s = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    CHECK(all_bytes(s, 4 * PG, 0));
    memset(s, 0x5a, 4 * PG);
    CHECK(all_bytes(s, 4 * PG, 0x5a));
    CHECK_OK(munmap(s, 4 * PG));

    /* file-backed MAP_PRIVATE: contents match, writes stay private;
     * the tail of the last page past EOF reads as zero. */
    const char *f = scratch_path("data");
    int fd = CHECK_OK(open(f, O_CREAT | O_RDWR, 0644));
    static unsigned char fdata[3 * 4096 + 100];
    for (size_t i = 0; i < sizeof fdata; i++)
        fdata[i] = (unsigned char)(i * 13 + 1);
    CHECK_EQ(write(fd, fdata, sizeof fdata), sizeof fdata);
    unsigned char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE,
                            fd, 0);
    CHECK(m != MAP_FAILED);
    CHECK_MEM(m, fdata, sizeof fdata);
    CHECK(all_bytes(m + sizeof fdata, 4 * PG - sizeof fdata, 0));
    m[0] = 0xee;
    m[PG + 5] = 0xee;
    CHECK_OK(munmap(m, 4 * PG));
    unsigned char chk[16];
    CHECK_EQ(pread(fd, chk, 1, 0), 1);
    CHECK_EQ(chk[0], fdata[0]);
    CHECK_EQ(pread(fd, chk, 1, PG + 5), 1);
    CHECK_EQ(chk[0], fdata[PG + 5]);
    /* a mapping at a page offset. */
    m = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 2 * PG);
    CHECK(m != MAP_FAILED);
    CHECK_MEM(m, fdata + 2 * PG, PG);
    CHECK_OK(munmap(m, PG));

    CHECK_OK(close(fd));

    /* mmap errors. */
    fd = CHECK_OK(open(f, O_RDONLY));
    CHECK_ERR((long)mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
              EACCES);
    CHECK_ERR((long)mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 1), EINVAL);
    CHECK_OK(close(fd));
    CHECK_ERR((long)mmap(NULL, PG, PROT_READ, MAP_PRIVATE, 9999, 0), EBADF);
    CHECK_ERR((long)mmap(NULL, PG, PROT_READ, MAP_ANONYMOUS, -1, 0), EINVAL);
    CHECK_ERR((long)mmap(NULL, PG, PROT_READ,
                         MAP_SHARED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              EINVAL);
    CHECK_ERR((long)mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                         0),
              EINVAL);
    CHECK_ERR((long)mmap((void *)0x10000001, PG, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
              EINVAL);
    fd = CHECK_OK(open(scratch_dir(), O_RDONLY | O_DIRECTORY));
    CHECK_ERR((long)mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 0), ENODEV);
    CHECK_OK(close(fd));

    /* munmap errors: unaligned address, zero length. */
    p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    CHECK_ERR(munmap(p + 1, PG), EINVAL);
    CHECK_ERR(munmap(p, 0), EINVAL);
    /* munmap of an unmapped range is fine; length is rounded up. */
    CHECK_OK(munmap(p + PG, 1));
    CHECK_OK(munmap(p + PG, PG));

    /* MAP_FIXED over an existing mapping replaces it;
     * MAP_FIXED_NOREPLACE refuses. */
    p[0] = 9;
    unsigned char *r = mmap(p, PG, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CHECK(r == p);
    CHECK_EQ(p[0], 0);
    CHECK_ERR((long)mmap(p, PG, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
                         0),
              EEXIST);
    CHECK_OK(munmap(p, PG));
    r = mmap(p, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
             -1, 0);
    CHECK(r == p);
    CHECK_OK(munmap(p, PG));

    /* mincore reports resident pages of a touched mapping. */
    p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    memset(p, 1, 4 * PG);
    unsigned char vec[4];
    CHECK_OK(mincore(p, 4 * PG, vec));
    for (int i = 0; i < 4; i++)
        CHECK_EQ(vec[i] & 1, 1);
    CHECK_ERR(mincore(p + 1, PG, vec), EINVAL);
    CHECK_OK(munmap(p, 4 * PG));
    CHECK_ERR(mincore(p, PG, vec), ENOMEM);

    /* brk grow/shrink. */
    uintptr_t cur = (uintptr_t)syscall(SYS_brk, 0);
    CHECK(cur != 0);
    uintptr_t want = cur + 64 * PG;
    CHECK_EQ((uintptr_t)syscall(SYS_brk, want), want);
    /* pages between the page-aligned old break and the new one are usable
     * and zero. */
    uintptr_t start = (cur + PG - 1) & ~(PG - 1);
    CHECK(all_bytes((void *)start, want - start, 0));
    memset((void *)start, 0x33, want - start);
    CHECK_EQ((uintptr_t)syscall(SYS_brk, cur + PG), cur + PG);
    CHECK_EQ((uintptr_t)syscall(SYS_brk, 0), cur + PG);
    /* regrowing gives zeroed memory again past the shrink point. */
    CHECK_EQ((uintptr_t)syscall(SYS_brk, want), want);
    {
        uintptr_t z = (cur + PG + PG - 1) & ~(PG - 1);
        CHECK(all_bytes((void *)z, want - z, 0));
    }
    CHECK_EQ((uintptr_t)syscall(SYS_brk, cur), cur);
    /* sbrk via libc. */
    void *b0 = sbrk(0);
    CHECK(sbrk(8192) == b0);
    CHECK((char *)sbrk(0) == (char *)b0 + 8192);
    memset(b0, 1, 8192);
    CHECK(sbrk(-8192) != (void *)-1);
    CHECK(sbrk(0) == b0);

    /* a 64 MiB anonymous mapping, every page touched. */
    size_t big = 64UL << 20;
    unsigned char *g = mmap(NULL, big, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(g != MAP_FAILED);
    for (size_t off = 0; off < big; off += PG)
        g[off] = (unsigned char)(off >> 12);
    for (size_t off = 0; off < big; off += PG)
        if (g[off] != (unsigned char)(off >> 12))
            FAILF("64MiB page at %zu (got %d)", off, g[off]);
    CHECK_OK(munmap(g, big));

    return 0;
}
