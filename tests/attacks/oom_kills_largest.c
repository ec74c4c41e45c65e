/* oom_kills_largest: when the sandbox runs out of memory, the process
 * holding the most is killed, as Linux's OOM killer chooses, whichever
 * process met the shortage: a hog child holds 100 of the 128 MiB and
 * waits, then its parent takes 40 MiB more. The hog dies (of SIGKILL);
 * the parent gets its memory, and it and a small sibling live on with
 * their memory intact. (The process that faulted was killed: here the
 * parent, while the hog lived on.) Not run natively: it would take the
 * host's memory there, not a sandbox's.
 */
// native: skip
// husk-do: --memory-mb 128
#include "check.h"
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define MB (1 << 20)

int main(void) {
    size_t mine = 8 * MB;
    unsigned char *p = mmap(NULL, mine, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    memset(p, 1, mine);
    int ready[2];
    CHECK_OK(pipe(ready));
    pid_t small = CHECK_OK(fork());
    if (small == 0) {
        /* Holds 2 MiB and keeps touching it. */
        unsigned char *q = mmap(NULL, 2 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (int round = 0; round < 400; round++) {
            memset(q, round & 0xff, 2 * MB);
            usleep(5000);
        }
        _exit(q[0] == (399 & 0xff) ? 0 : 2);
    }
    pid_t hog = CHECK_OK(fork());
    if (hog == 0) {
        /* Holds 100 MiB, then waits: the next fault is someone else's. */
        unsigned char *h = mmap(NULL, 100 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (h == MAP_FAILED)
            _exit(3);
        memset(h, 7, 100 * MB);
        if (write(ready[1], "r", 1) != 1)
            _exit(4);
        for (;;)
            pause();
    }
    char c;
    CHECK_EQ(read(ready[0], &c, 1), 1);
    /* Now the parent takes 40 MiB more, past the limit: the shortage is
     * met at one of its faults, and the hog, the largest, must die. */
    for (int i = 0; i < 40; i++) {
        unsigned char *m = mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(m != MAP_FAILED);
        memset(m, 5, MB);
    }
    memset(p, 9, mine);
    int st;
    CHECK_EQ(waitpid(hog, &st, 0), hog);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    for (size_t i = 0; i < mine; i += 4096)
        CHECK_EQ(p[i], 9);
    CHECK_EQ(waitpid(small, &st, 0), small);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return 0;
}
