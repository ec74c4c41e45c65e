/* mremap.c — mremap(2) as Linux: file mappings with an offset grown in
 * place, moved and shrunk; MREMAP_FIXED, MREMAP_DONTUNMAP, old_size 0, the
 * errors for each bad argument, and a range spanning several mappings
 * (also seen by msync's ENOMEM for unmapped pages). */
#include "check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>

#define PG 4096UL
#define NPAGES 16

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

/* The file's page i holds the byte i + 1 throughout. */
static int make_file(void) {
    int fd = CHECK_OK(open(scratch_path("mremap"), O_CREAT | O_RDWR | O_TRUNC, 0644));
    static unsigned char page[PG];
    for (int i = 0; i < NPAGES; i++) {
        memset(page, i + 1, PG);
        CHECK_EQ(pwrite(fd, page, PG, i * PG), PG);
    }
    return fd;
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* Page i of the mapping at p shows file page first + i. */
static void check_file_pages(const unsigned char *p, int first, int n) {
    for (int i = 0; i < n; i++)
        if (!all_bytes(p + i * PG, PG, first + i + 1))
            FAILF("page %d: got %d, want file page %d", i, p[i * PG], first + i);
}

/* Whether the page at p is mapped, by mincore and by msync (both ENOMEM
 * for an unmapped page). */
static int is_mapped(const void *p) {
    unsigned char v;
    int by_msync = msync((void *)p, PG, MS_ASYNC) == 0;
    CHECK(by_msync || errno == ENOMEM);
    if (mincore((void *)p, PG, &v) == 0) {
        CHECK(by_msync);
        return 1;
    }
    CHECK_EQ(errno, ENOMEM);
    CHECK(!by_msync);
    return 0;
}

static unsigned char file_byte(int fd, off_t off) {
    unsigned char c;
    CHECK_EQ(pread(fd, &c, 1, off), 1);
    return c;
}

/* A free range of n pages (reserved, then released). */
static unsigned char *free_range(size_t n) {
    unsigned char *r = mmap(NULL, n * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(r != MAP_FAILED);
    CHECK_OK(munmap(r, n * PG));
    return r;
}

static unsigned char *map_file_at(unsigned char *at, size_t pages, int shared, int fd, int first) {
    int flags = (shared ? MAP_SHARED : MAP_PRIVATE) | (at ? MAP_FIXED : 0);
    unsigned char *m = mmap(at, pages * PG, PROT_READ | PROT_WRITE, flags, fd, first * PG);
    CHECK(m != MAP_FAILED);
    return m;
}

static unsigned char *anon(size_t pages, int shared, unsigned char fill) {
    unsigned char *m = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
                            (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    memset(m, fill, pages * PG);
    return m;
}

static void file_offsets(int fd) {
    for (int shared = 0; shared <= 1; shared++) {
        /* Grown in place: room behind it, no flags needed. */
        unsigned char *base = free_range(8);
        unsigned char *m = map_file_at(base, 2, shared, fd, 4);
        check_file_pages(m, 4, 2);
        CHECK(mremap(m, 2 * PG, 5 * PG, 0) == m);
        check_file_pages(m, 4, 5);
        m[4 * PG] = 0xee; /* file page 8 */
        CHECK_EQ(file_byte(fd, 8 * PG), shared ? 0xee : 9);
        /* Shrunk in place: the tail is gone. */
        CHECK(mremap(m, 5 * PG, 3 * PG, 0) == m);
        CHECK(is_mapped(m + 2 * PG));
        CHECK(!is_mapped(m + 3 * PG));
        check_file_pages(m, 4, 3);
        CHECK_OK(munmap(m, 3 * PG));
        if (shared) {
            unsigned char c = 9;
            CHECK_EQ(pwrite(fd, &c, 1, 8 * PG), 1);
        }

        /* Moved: a page right behind blocks growing in place. */
        base = free_range(4);
        m = map_file_at(base, 2, shared, fd, 2);
        unsigned char *blocker = mmap(base + 2 * PG, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        CHECK(blocker == base + 2 * PG);
        m[1] = 0x77; /* file page 2, byte 1 */
        CHECK_ERR((long)mremap(m, 2 * PG, 4 * PG, 0), ENOMEM);
        unsigned char *q = mremap(m, 2 * PG, 4 * PG, MREMAP_MAYMOVE);
        CHECK(q != MAP_FAILED);
        CHECK(q != m);
        CHECK(!is_mapped(m));
        CHECK(is_mapped(blocker));
        CHECK_EQ(q[1], 0x77);
        CHECK_EQ(q[0], 3);
        CHECK(all_bytes(q + 2, PG - 2, 3));
        check_file_pages(q + PG, 3, 3);
        q[3 * PG + 5] = 0x99; /* file page 5 */
        CHECK_EQ(file_byte(fd, 5 * PG + 5), shared ? 0x99 : 6);
        CHECK_EQ(file_byte(fd, 2 * PG + 1), shared ? 0x77 : 3);
        /* Shrunk while moving to a fixed place: the head stays. */
        unsigned char *t = free_range(1);
        CHECK(mremap(q + 2 * PG, 2 * PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, t) == t);
        check_file_pages(t, 4, 1);
        CHECK(!is_mapped(q + 2 * PG));
        CHECK(!is_mapped(q + 3 * PG));
        CHECK_EQ(q[1], 0x77);
        CHECK_OK(munmap(q, 2 * PG));
        CHECK_OK(munmap(t, PG));
        CHECK_OK(munmap(blocker, PG));
        if (shared) {
            unsigned char c = 6;
            CHECK_EQ(pwrite(fd, &c, 1, 5 * PG + 5), 1);
            c = 3;
            CHECK_EQ(pwrite(fd, &c, 1, 2 * PG + 1), 1);
        }
        /* A write to the file shows through a moved shared mapping. */
        m = map_file_at(NULL, 1, shared, fd, 10);
        q = mremap(m, PG, 3 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, free_range(3));
        CHECK(q != MAP_FAILED);
        check_file_pages(q, 10, 3);
        if (shared) {
            unsigned char c = 0x42;
            CHECK_EQ(pwrite(fd, &c, 1, 12 * PG), 1);
            CHECK_EQ(q[2 * PG], 0x42);
            c = 13;
            CHECK_EQ(pwrite(fd, &c, 1, 12 * PG), 1);
        }
        CHECK_OK(munmap(q, 3 * PG));
    }
}

static void fixed(void) {
    unsigned char *p = anon(2, 0, 0x11);
    unsigned char *t = anon(3, 0, 0x22);
    CHECK_ERR((long)mremap(p, 2 * PG, 2 * PG, MREMAP_FIXED, t), EINVAL);
    CHECK_ERR((long)mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, t + 1), EINVAL);
    /* The old and the new range overlap. */
    CHECK_ERR((long)mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, p + PG), EINVAL);
    CHECK_ERR((long)mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, p), EINVAL);
    CHECK_ERR((long)mremap(p + PG, PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, p), EINVAL);
    CHECK(all_bytes(p, 2 * PG, 0x11));
    /* The target's first new_len bytes are replaced, the rest stays. */
    CHECK(mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, t) == t);
    CHECK(!is_mapped(p));
    CHECK(all_bytes(t, 2 * PG, 0x11));
    CHECK(all_bytes(t + 2 * PG, PG, 0x22));
    /* Growing to a fixed place: the new part reads zeros. */
    unsigned char *u = free_range(4);
    CHECK(mremap(t, PG, 4 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, u) == u);
    CHECK(all_bytes(u, PG, 0x11));
    CHECK(all_bytes(u + PG, 3 * PG, 0));
    CHECK(!is_mapped(t));
    CHECK(all_bytes(t + PG, PG, 0x11));
    CHECK_OK(munmap(u, 4 * PG));
    CHECK_OK(munmap(t + PG, 2 * PG));
}

static void dontunmap(int fd) {
    unsigned char *p = anon(2, 0, 0x33);
    CHECK_ERR((long)mremap(p, 2 * PG, 2 * PG, MREMAP_DONTUNMAP, NULL), EINVAL);
    CHECK_ERR((long)mremap(p, 2 * PG, 3 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL), EINVAL);
    CHECK_ERR((long)mremap(p, 2 * PG, PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL), EINVAL);
    /* Private anonymous: the pages move, the old range reads zeros. */
    unsigned char *q = mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
    CHECK(q != MAP_FAILED);
    CHECK(q != p);
    CHECK(all_bytes(q, 2 * PG, 0x33));
    CHECK(is_mapped(p));
    CHECK(all_bytes(p, 2 * PG, 0));
    p[0] = 1;
    CHECK_EQ(q[0], 0x33);
    CHECK_OK(munmap(p, 2 * PG));
    CHECK_OK(munmap(q, 2 * PG));

    /* With MREMAP_FIXED too. */
    p = anon(1, 0, 0x34);
    unsigned char *t = free_range(1);
    CHECK(mremap(p, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, t) == t);
    CHECK_EQ(t[0], 0x34);
    CHECK_EQ(p[0], 0);
    CHECK_OK(munmap(p, PG));
    CHECK_OK(munmap(t, PG));

    /* Shared anonymous: both ranges stay mapped; the old one still
     * reaches the same pages. */
    p = anon(1, 1, 0x35);
    q = mremap(p, PG, PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
    CHECK(q != MAP_FAILED && q != p);
    CHECK_EQ(q[0], 0x35);
    CHECK_EQ(p[0], 0x35);
    q[0] = 0x36;
    CHECK_EQ(p[0], 0x36);
    CHECK_OK(munmap(p, PG));
    CHECK_OK(munmap(q, PG));

    /* File mappings: the old range faults the file in again. */
    for (int shared = 0; shared <= 1; shared++) {
        p = map_file_at(NULL, 2, shared, fd, 6);
        p[0] = 0x50;
        q = mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
        CHECK(q != MAP_FAILED && q != p);
        CHECK_EQ(q[0], 0x50);
        CHECK(all_bytes(q + 1, 2 * PG - 1 - PG, 7));
        check_file_pages(q + PG, 7, 1);
        CHECK_EQ(p[0], shared ? 0x50 : 7);
        check_file_pages(p + PG, 7, 1);
        CHECK_EQ(file_byte(fd, 6 * PG), shared ? 0x50 : 7);
        CHECK_OK(munmap(p, 2 * PG));
        CHECK_OK(munmap(q, 2 * PG));
        unsigned char c = 7;
        CHECK_EQ(pwrite(fd, &c, 1, 6 * PG), 1);
    }
}

static void old_size_zero(int fd) {
    /* A private mapping cannot be duplicated. */
    unsigned char *p = anon(2, 0, 0x40);
    CHECK_ERR((long)mremap(p, 0, 2 * PG, MREMAP_MAYMOVE), EINVAL);
    CHECK_OK(munmap(p, 2 * PG));
    p = map_file_at(NULL, 2, 0, fd, 1);
    CHECK_ERR((long)mremap(p, 0, 2 * PG, MREMAP_MAYMOVE), EINVAL);
    CHECK_OK(munmap(p, 2 * PG));

    /* A shared one gets a second mapping of the same pages. */
    p = anon(2, 1, 0x44);
    CHECK_ERR((long)mremap(p, 0, 2 * PG, 0), ENOMEM);
    unsigned char *q = mremap(p, 0, 2 * PG, MREMAP_MAYMOVE);
    CHECK(q != MAP_FAILED && q != p);
    CHECK(all_bytes(q, 2 * PG, 0x44));
    q[PG] = 0x45;
    CHECK_EQ(p[PG], 0x45);
    p[0] = 0x46;
    CHECK_EQ(q[0], 0x46);
    CHECK_OK(munmap(p, 2 * PG));
    CHECK_EQ(q[PG], 0x45);
    CHECK_OK(munmap(q, 2 * PG));

    /* Of a shared file mapping with an offset: from that offset on. */
    p = map_file_at(NULL, 3, 1, fd, 9);
    q = mremap(p + PG, 0, 2 * PG, MREMAP_MAYMOVE);
    CHECK(q != MAP_FAILED);
    check_file_pages(q, 10, 2);
    q[0] = 0x60;
    CHECK_EQ(p[PG], 0x60);
    CHECK_EQ(file_byte(fd, 10 * PG), 0x60);
    CHECK(is_mapped(p + PG));
    CHECK_OK(munmap(p, 3 * PG));
    CHECK_OK(munmap(q, 2 * PG));
    unsigned char c = 11;
    CHECK_EQ(pwrite(fd, &c, 1, 10 * PG), 1);
}

static void errors(void) {
    unsigned char *p = anon(3, 0, 0x55);
    CHECK_OK(munmap(p + 2 * PG, PG)); /* nothing right behind it */
    CHECK_ERR((long)mremap(p + 1, PG, PG, 0), EINVAL);
    CHECK_ERR((long)mremap(p + 1, PG, 2 * PG, MREMAP_MAYMOVE), EINVAL);
    CHECK_ERR((long)mremap(p, PG, PG, 8), EINVAL);
    CHECK_ERR((long)mremap(p, PG, PG, MREMAP_MAYMOVE | 0x100), EINVAL);
    CHECK_ERR((long)mremap(p, PG, 0, 0), EINVAL);
    CHECK_ERR((long)mremap(p, PG, 0, MREMAP_MAYMOVE), EINVAL);
    /* An unmapped old range. */
    unsigned char *gone = free_range(2);
    CHECK_ERR((long)mremap(gone, PG, 2 * PG, MREMAP_MAYMOVE), EFAULT);
    CHECK_ERR((long)mremap(gone, PG, PG, 0), EFAULT);
    /* An old range running past its mapping. */
    CHECK_ERR((long)mremap(p, 3 * PG, 4 * PG, MREMAP_MAYMOVE), EFAULT);
    /* Growing into an occupied range without MREMAP_MAYMOVE. */
    CHECK_ERR((long)mremap(p, PG, 2 * PG, 0), ENOMEM);
    /* Same size: nothing changes. */
    CHECK(mremap(p, 2 * PG, 2 * PG, 0) == p);
    CHECK(all_bytes(p, 2 * PG, 0x55));
    CHECK_OK(munmap(p, 2 * PG));
}

/* A range spanning several mappings, as Linux 6.17 and later: MREMAP_FIXED
 * to the same size moves each, at its offset (the target keeps what it has
 * in the gaps); growing across them is EFAULT, a shrink unmaps the tail
 * across them and the gaps, and the same size in place returns the range. */
static void spanning(int fd) {
    unsigned char *p = anon(5, 0, 'a');
    memset(p + PG, 'b', PG);
    CHECK_OK(mprotect(p + PG, PG, PROT_READ));
    CHECK_OK(munmap(p + 2 * PG, PG));
    map_file_at(p + 3 * PG, 1, 1, fd, 5);
    CHECK_ERR((long)mremap(p, 5 * PG, 6 * PG, MREMAP_MAYMOVE), EFAULT);
    CHECK_ERR((long)mremap(p, 2 * PG, 3 * PG, MREMAP_MAYMOVE), EFAULT);
    CHECK(mremap(p, 5 * PG, 5 * PG, 0) == p);
    CHECK(mremap(p, 5 * PG, 5 * PG, MREMAP_MAYMOVE) == p);
    unsigned char *t = mmap(NULL, 6 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(t != MAP_FAILED);
    /* Moving while shrinking: what is kept must lie in the first mapping. */
    CHECK_ERR((long)mremap(p, 5 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, t), EFAULT);
    /* The range must begin in a mapping. */
    CHECK_ERR((long)mremap(p + 2 * PG, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, t), EFAULT);
    CHECK(mremap(p, 5 * PG, 5 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, t) == t);
    for (int i = 0; i < 5; i++)
        CHECK(!is_mapped(p + i * PG));
    CHECK(all_bytes(t, PG, 'a'));
    CHECK(all_bytes(t + PG, PG, 'b'));
    CHECK(is_mapped(t + 2 * PG));
    check_file_pages(t + 3 * PG, 5, 1);
    CHECK(all_bytes(t + 4 * PG, PG, 'a'));
    CHECK(is_mapped(t + 5 * PG));
    CHECK(mremap(t, 5 * PG, PG, 0) == t);
    CHECK(all_bytes(t, PG, 'a'));
    for (int i = 1; i < 5; i++)
        CHECK(!is_mapped(t + i * PG));
    CHECK(is_mapped(t + 5 * PG));
    CHECK_OK(munmap(t, 6 * PG));

    /* A shrink in place keeping parts of two mappings. */
    p = anon(3, 0, 'c');
    CHECK_OK(mprotect(p, PG, PROT_READ));
    CHECK(mremap(p, 3 * PG, 2 * PG, 0) == p);
    CHECK(all_bytes(p, 2 * PG, 'c'));
    CHECK(!is_mapped(p + 2 * PG));
    /* msync: a range with an unmapped page is ENOMEM, however it starts. */
    CHECK_ERR(msync(p, 3 * PG, MS_ASYNC), ENOMEM);
    CHECK_ERR(msync(p, 3 * PG, MS_SYNC), ENOMEM);
    CHECK_OK(msync(p, 2 * PG, MS_SYNC));
    CHECK_OK(msync(p + 2 * PG, 0, MS_ASYNC));
    CHECK_ERR(msync(p + 1, PG, MS_ASYNC), EINVAL);
    CHECK_OK(munmap(p, 2 * PG));
}

int main(void) {
    int fd = make_file();
    file_offsets(fd);
    fixed();
    dontunmap(fd);
    old_size_zero(fd);
    errors();
    spanning(fd);
    /* The file still holds what it started with: page i is i + 1. */
    unsigned char *m = map_file_at(NULL, NPAGES, 0, fd, 0);
    check_file_pages(m, 0, NPAGES);
    CHECK_OK(munmap(m, NPAGES * PG));
    CHECK_OK(close(fd));
    return 0;
}
