/* mremap_moves: mremap(old, old_len, new_len, MREMAP_MAYMOVE) must move
 * the mapping when it cannot grow in place, keeping its contents; it
 * returned ENOMEM (seen in `python3 -m venv`) and printed a sentry
 * warning on the guest's stderr. Covers anonymous private and shared
 * mappings, file mappings with an offset, shrinking, and MREMAP_FIXED.
 */
#include "check.h"
#include <fcntl.h>
#include <sys/mman.h>

#define PAGE 4096UL

int main(void) {
    for (int shared = 0; shared < 2; shared++) {
        int fl = (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS;
        /* A mapping with a neighbour right after it cannot grow in place. */
        char *a = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, fl, -1, 0);
        CHECK(a != MAP_FAILED);
        CHECK_OK(munmap(a + 2 * PAGE, 2 * PAGE));
        char *block = mmap(a + 2 * PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        CHECK(block == a + 2 * PAGE);
        memset(a, 'x', 2 * PAGE);
        CHECK_ERR(mremap(a, 2 * PAGE, 8 * PAGE, 0), ENOMEM);
        char *b = mremap(a, 2 * PAGE, 8 * PAGE, MREMAP_MAYMOVE);
        CHECK(b != MAP_FAILED);
        CHECK(b != a);
        CHECK_EQ(b[0], 'x');
        CHECK_EQ(b[2 * PAGE - 1], 'x');
        if (!shared) {
            CHECK_EQ(b[8 * PAGE - 1], 0);
            b[8 * PAGE - 1] = 'y';
        }
        /* The old range is gone. */
        unsigned char vec;
        CHECK_ERR(mincore(a, PAGE, &vec), ENOMEM);
        /* Shrink in place, then move to a fixed place. */
        CHECK(mremap(b, 8 * PAGE, PAGE, 0) == b);
        char *c = mmap(NULL, 16 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(c != MAP_FAILED);
        char *d = mremap(b, PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, c + 4 * PAGE);
        CHECK(d == c + 4 * PAGE);
        CHECK_EQ(d[0], 'x');
        CHECK_OK(munmap(c, 16 * PAGE));
        CHECK_OK(munmap(block, PAGE));
    }
    /* A file mapping with an offset, moved. */
    char tmpl[] = "/tmp/mremap-XXXXXX";
    int fd = CHECK_OK(mkstemp(tmpl));
    CHECK_OK(unlink(tmpl));
    char buf[4 * PAGE];
    for (unsigned i = 0; i < sizeof buf; i++)
        buf[i] = (char)(i / PAGE + 'a');
    CHECK_EQ(write(fd, buf, sizeof buf), sizeof buf);
    char *f = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, PAGE);
    CHECK(f != MAP_FAILED);
    char *g = mmap(f + PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    char *h = mremap(f, PAGE, 3 * PAGE, MREMAP_MAYMOVE);
    CHECK(h != MAP_FAILED);
    CHECK_EQ(h[0], 'b');
    CHECK_EQ(h[PAGE], 'c');
    CHECK_EQ(h[2 * PAGE], 'd');
    if (g != MAP_FAILED)
        CHECK_OK(munmap(g, PAGE));
    CHECK_OK(munmap(h, 3 * PAGE));
    close(fd);
    return 0;
}
