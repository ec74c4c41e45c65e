/* fork_state.c — what a new process or thread inherits of the CPU and
 * execution state: the SSE control/status register (MXCSR: rounding,
 * flush-to-zero) and the x87 control word, in a child, a grandchild and a
 * new thread; the personality, which a child may change without changing
 * its parent's, and which an exec keeps (ADDR_NO_RANDOMIZE, as setarch
 * -R uses it). */
#include "check.h"
#include <pthread.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <xmmintrin.h>

/* Round toward zero, flush-to-zero, all exceptions masked. */
#define WANT_MXCSR (0x1f80u | 0x6000u | 0x8000u)

static unsigned short x87_cw(void) {
    unsigned short cw;
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    return cw;
}

static void set_x87_cw(unsigned short cw) {
    __asm__ volatile("fldcw %0" ::"m"(cw));
}

static unsigned short want_cw;

/* 0 when the calling thread has the state main set up. */
static int state_ok(void) {
    return (_mm_getcsr() & ~0x3fu) == WANT_MXCSR && x87_cw() == want_cw ? 0 : 1;
}

static void *thread_state(void *arg) {
    (void)arg;
    return (void *)(long)state_ok();
}

static int exit_code(pid_t p) {
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "persona") == 0)
        return personality(0xffffffff) == ADDR_NO_RANDOMIZE ? 0 : 1;

    _mm_setcsr(WANT_MXCSR);
    want_cw = (x87_cw() & ~0x0c00) | 0x0c00; /* x87 round toward zero */
    set_x87_cw(want_cw);
    CHECK_EQ(state_ok(), 0);

    pid_t c = CHECK_OK(fork());
    if (c == 0) {
        if (state_ok())
            _exit(1);
        pid_t g = fork();
        if (g == 0)
            _exit(state_ok() ? 2 : 0);
        int st;
        if (g < 0 || waitpid(g, &st, 0) != g || !WIFEXITED(st))
            _exit(3);
        _exit(WEXITSTATUS(st));
    }
    CHECK_EQ(exit_code(c), 0);

    pthread_t t;
    void *r;
    CHECK_EQ(pthread_create(&t, NULL, thread_state, NULL), 0);
    CHECK_EQ(pthread_join(t, &r), 0);
    CHECK_EQ((long)r, 0);
    CHECK_EQ(state_ok(), 0);

    /* personality: per process image, inherited, changed by a child alone. */
    CHECK_EQ(personality(0xffffffff), PER_LINUX);
    c = CHECK_OK(fork());
    if (c == 0) {
        if (personality(0xffffffff) != PER_LINUX)
            _exit(1);
        if (personality(ADDR_NO_RANDOMIZE) != PER_LINUX)
            _exit(2);
        if (personality(0xffffffff) != ADDR_NO_RANDOMIZE)
            _exit(3);
        execl("/proc/self/exe", argv[0], "persona", (char *)NULL);
        _exit(4);
    }
    CHECK_EQ(exit_code(c), 0);
    CHECK_EQ(personality(0xffffffff), PER_LINUX);
    return 0;
}
