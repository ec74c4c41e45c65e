/* syscall_fuzz: random raw system calls with garbage arguments, run as
 * the sandbox's init (see syscall_fuzz.sh). Children make the calls, a
 * bounded number each, with stdio on /dev/null in a scratch directory;
 * whatever they do to themselves (exit, a fatal signal, munmap of their
 * own code, blocking forever) ends only them: the parent kills a child
 * that outlives its deadline and starts the next, until it has made
 * `calls` calls. Grandchildren (a random fork or clone) exit at once.
 * Prints "calls: N" at the end. Deterministic for a seed: the child k of
 * seed S draws from seed S*1000003+k.
 *
 * Never run natively: calls such as reboot, kill(-1) and sethostname would
 * act on the host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PER_CHILD 2000
#define CHILD_DEADLINE_MS 500

static uint64_t state;

static uint64_t rnd(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static char *buf;     /* a read-write area of 64 KiB */
static char *ro;      /* a read-only page */
static char *hole;    /* an address with nothing mapped */

static uint64_t arg(void) {
    switch (rnd() % 16) {
    case 0: return 0;
    case 1: return 1;
    case 2: return (uint64_t)-1;
    case 3: return rnd() % 64;                         /* small ints, fds */
    case 4: return rnd() % 4096;
    case 5: return rnd();                              /* anything */
    case 6: return (uint64_t)(buf + rnd() % 65536);    /* valid memory */
    case 7: return (uint64_t)(buf + 65536 - rnd() % 16); /* runs off the end */
    case 8: return (uint64_t)ro;
    case 9: return (uint64_t)hole + rnd() % 4096;
    case 10: return 0x7ffffffff000ULL - (rnd() % 4) * 4096;
    case 11: return 0xffffffffff600000ULL;             /* vsyscall page */
    case 12: return 0x8000000000000000ULL | rnd();     /* kernel half */
    case 13: return (uint64_t)(1ULL << (rnd() % 64));
    case 14: return rnd() & 0xffffffffULL;
    default: return (uint64_t)(buf + (rnd() % 16) * 4096); /* page-aligned */
    }
}

static long number(void) {
    switch (rnd() % 32) {
    case 0: return -1 - (long)(rnd() % 100);           /* negative */
    case 1: return 460 + (long)(rnd() % 600);           /* past the table */
    case 2: return 0x40000000L | (long)(rnd() % 550);   /* the x32 bit */
    case 3: return (long)rnd();
    default: return (long)(rnd() % 460);
    }
}

static long ms_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void on_alarm(int sig) {
    (void)sig;
}

static void child(uint64_t seed, volatile long *counter) {
    state = seed ? seed : 1;
    /* A 5 ms interval timer whose handler does nothing interrupts calls
     * that would block (until a random call changes the handler or the
     * timer: then the parent's deadline ends the child). */
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 5000}, {0, 5000}};
    setitimer(ITIMER_REAL, &it, NULL);
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++)
        dup2(null, fd);
    pid_t me = getpid();
    for (int i = 0; i < PER_CHILD; i++) {
        long nr = number();
        uint64_t a[6];
        for (int j = 0; j < 6; j++)
            a[j] = arg();
        /* Limits set on init (pid 1; the kernel reads the pid as 32 bits)
         * would end the fuzzer itself: RLIMIT_CPU kills even init. */
        if (nr == SYS_prlimit64 && (pid_t)a[0] == 1)
            continue;
        __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
        syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
        if (getpid() != me)
            _exit(0); /* a random fork: only the fuzzing child goes on */
    }
    _exit(0);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
    long calls = argc > 2 ? atol(argv[2]) : 100000;
    long *counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    /* A guard page after the buffer, so that pointers that run off its end
     * never land in the counter. */
    buf = mmap(NULL, 65536 + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf != MAP_FAILED)
        mprotect(buf + 65536, 4096, PROT_NONE);
    ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (counter == MAP_FAILED || buf == MAP_FAILED || ro == MAP_FAILED || hole == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    munmap(hole, 4096);
    mkdir("/tmp/fuzz", 0777);
    if (chdir("/tmp/fuzz") != 0) {
        perror("chdir");
        return 2;
    }
    /* Signals children send to the whole group must not end us. */
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD)
            signal(s, SIG_IGN);
    long children = 0;
    while (*counter < calls) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 3;
        }
        if (pid == 0) {
            for (int s = 1; s < 32; s++)
                signal(s, SIG_DFL);
            child(seed * 1000003 + (uint64_t)children, counter);
        }
        children++;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int st;
        for (;;) {
            pid_t r = waitpid(pid, &st, WNOHANG | __WALL);
            if (r == pid)
                break;
            if (r < 0 && errno != EINTR) {
                perror("waitpid");
                return 4;
            }
            if (ms_since(&t0) > CHILD_DEADLINE_MS)
                kill(pid, SIGKILL);
            struct timespec nap = {0, 2000000};
            nanosleep(&nap, NULL);
        }
        /* Reap grandchildren reparented to us, and kill stragglers. */
        kill(-1, SIGKILL);
        while (waitpid(-1, &st, WNOHANG | __WALL) > 0) {
        }
        if (children > 100000) {
            fprintf(stderr, "no progress: %ld calls after %ld children\n", *counter, children);
            return 5;
        }
    }
    printf("calls: %ld children: %ld seed: %llu\n", *counter, children, (unsigned long long)seed);
    return 0;
}
