/* pipes.c LIMIT_MB — opens thousands of pipes and fills each one: each is
 * bounded by its capacity, and all of them together must be bounded by the
 * sandbox's memory limit (a write past it fails with ENOMEM). */
#include "check.h"
#include <fcntl.h>
#include <sys/resource.h>

#define MiB (1024L * 1024)
#define PIPES 8192

static char chunk[65536];

int main(int argc, char **argv) {
    CHECK(argc == 2);
    long limit = atol(argv[1]) * MiB;
    struct rlimit rl = {2 * PIPES + 64, 2 * PIPES + 64};
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    long total = 0;
    int refused = 0;
    for (int i = 0; i < PIPES && !refused; i++) {
        int p[2];
        CHECK(pipe2(p, O_NONBLOCK) == 0);
        for (;;) {
            ssize_t n = write(p[1], chunk, sizeof chunk);
            if (n > 0) {
                total += n;
                continue;
            }
            CHECK(n == -1);
            if (errno == ENOMEM)
                refused = 1;
            else
                CHECK_EQ(errno, EAGAIN);
            break;
        }
        if (total > limit)
            FAILF("%ld MiB queued in %d pipes, past the %ld MiB limit", total / MiB, i + 1, limit / MiB);
    }
    if (!refused)
        FAILF("%d pipes took %ld MiB without an ENOMEM", PIPES, total / MiB);
    if (total < limit / 2)
        FAILF("ENOMEM after only %ld MiB", total / MiB);
    printf("pipes: ENOMEM after %ld MiB queued, of a %ld MiB limit\n", total / MiB, limit / MiB);
    return 0;
}
