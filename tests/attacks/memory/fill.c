/* fill.c MODE LIMIT_MB — fills memory-backed files past the sandbox's
 * memory limit and checks that husk stops the writes with ENOSPC near the
 * limit, and that freed data is uncharged.
 *
 * MODE is tmpfs (/tmp), overlay (a file under / in the overlay's upper
 * layer), shm (/dev/shm) or memfd. Run under `husk do --memory-mb
 * LIMIT_MB` by the attack scripts: natively the files would take host
 * memory without bound.
 */
#include "check.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#define MiB (1024L * 1024)

static char chunk[MiB];

static int open_target(const char *mode) {
    const char *path;
    if (strcmp(mode, "memfd") == 0) {
        int fd = memfd_create("bomb", 0);
        CHECK(fd >= 0);
        return fd;
    } else if (strcmp(mode, "tmpfs") == 0) {
        path = "/tmp/bomb";
    } else if (strcmp(mode, "overlay") == 0) {
        path = "/var/tmp/husk-overlay-bomb";
    } else if (strcmp(mode, "shm") == 0) {
        path = "/dev/shm/bomb";
    } else {
        FAILF("unknown mode %s", mode);
    }
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    /* Unlinked while open: the pages stay charged until the last close. */
    CHECK(unlink(path) == 0);
    return fd;
}

/* Writes until the first error; returns the bytes written, checks that the
 * error was ENOSPC and that a short write came first or at a chunk edge. */
static long fill(int fd, long max) {
    long total = 0;
    for (;;) {
        ssize_t n = write(fd, chunk, sizeof chunk);
        if (n < 0) {
            CHECK_EQ(errno, ENOSPC);
            return total;
        }
        CHECK(n > 0);
        total += n;
        if (total > max)
            FAILF("wrote %ld MiB, past the %ld MiB limit", total / MiB, max / MiB);
    }
}

int main(int argc, char **argv) {
    CHECK(argc == 3);
    const char *mode = argv[1];
    long limit = atol(argv[2]) * MiB;
    memset(chunk, 'x', sizeof chunk);

    if (strcmp(mode, "tmpfs") == 0 || strcmp(mode, "shm") == 0) {
        struct statfs sf;
        CHECK(statfs(strcmp(mode, "tmpfs") == 0 ? "/tmp" : "/dev/shm", &sf) == 0);
        /* The filesystem's size is the sandbox's memory, not more. */
        CHECK((long)(sf.f_blocks * sf.f_bsize) <= limit);
        CHECK((long)(sf.f_bfree * sf.f_bsize) <= limit);
    }

    int fd = open_target(mode);
    /* Growing by truncate takes no memory (a hole), as on Linux. */
    CHECK(ftruncate(fd, 4 * limit) == 0);
    CHECK(ftruncate(fd, 0) == 0);

    long first = fill(fd, limit);
    /* The sandbox's own pages (the program, the sentry's view of it) take
     * some of the limit; the files get most of it. */
    if (first < limit / 2)
        FAILF("ENOSPC after only %ld MiB of %ld", first / MiB, limit / MiB);

    /* A second file gets nothing while the first holds the memory. */
    int fd2 = open_target(mode);
    CHECK(write(fd2, chunk, sizeof chunk) == -1 && errno == ENOSPC);

    /* Truncating frees the pages: the second file can take them. */
    CHECK(ftruncate(fd, 0) == 0);
    long second = fill(fd2, limit);
    if (second < first - 16 * MiB)
        FAILF("after truncate only %ld MiB of %ld fit", second / MiB, first / MiB);

    /* Closing the last reference of an unlinked file frees its pages. */
    CHECK(close(fd2) == 0);
    long third = fill(fd, limit);
    if (third < first - 16 * MiB)
        FAILF("after close only %ld MiB of %ld fit", third / MiB, first / MiB);
    printf("%s: ENOSPC after %ld, %ld, %ld MiB of a %ld MiB limit\n", mode, first / MiB, second / MiB, third / MiB,
           limit / MiB);
    return 0;
}
