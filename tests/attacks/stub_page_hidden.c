/* stub_page_hidden: the top of the guest's address space must look the
 * same to every memory call, whether or not the platform keeps a page of
 * its own there (the ptrace platform's stub code sits just above the
 * guest's end). Found holes this guards: madvise(MADV_DONTNEED) over it
 * unmapped the stub (the sandbox then spun forever), mremap(MREMAP_FIXED)
 * onto it replaced the stub with a guest page, MAP_FIXED_NOREPLACE probing
 * found it, and loads read its code.
 *
 * Over the last 32 pages of x86-64 user space, for every page that
 * /proc/self/maps does not list: mmap(MAP_FIXED_NOREPLACE) either succeeds
 * or fails with ENOMEM, and the ENOMEM pages form the end of the space
 * (nothing usable lies above one); munmap there gives EINVAL; mremap of
 * one of our pages onto it MREMAP_FIXED gives EINVAL; madvise,
 * mprotect, mincore, mlock give ENOMEM; shmat of a SysV segment there
 * gives ENOMEM as well (as Linux's do_mmap past TASK_SIZE); a load faults with SEGV_MAPERR
 * (on a CPU without protection keys one execute-only page may read);
 * /proc/self/mem reads (where served) give EIO. Afterwards the sandbox still works: a
 * child maps and touches memory and runs /bin/true. Passes natively.
 */
#include "check.h"
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <cpuid.h>

#define PAGE 4096UL
#define END 0x800000000000UL /* 2^47 */
#define PAGES 32

static int listed(uintptr_t a) {
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    unsigned long lo, hi;
    char line[512];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi)
            found = 1;
    fclose(f);
    return found;
}

static sigjmp_buf jb;
static volatile int segv_code;

static void on_segv(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)ctx;
    segv_code = si->si_code;
    siglongjmp(jb, 1);
}

/* Loads a byte from `a`; returns the SIGSEGV si_code, or 0 if it read. */
static int load(uintptr_t a) {
    segv_code = 0;
    if (sigsetjmp(jb, 1) == 0) {
        volatile unsigned char c = *(volatile unsigned char *)a;
        (void)c;
        return 0;
    }
    return segv_code;
}

/* Whether the OS enabled protection keys (CPUID.7.0:ECX.OSPKE). Without
 * them x86 cannot make a page executable but unreadable, so a platform's
 * execute-only code page reads as code. */
static int have_pkeys(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (c >> 4) & 1;
}

static void still_works(void) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        char *p = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            _exit(3);
        memset(p, 7, 64 * PAGE);
        execl("/bin/true", "true", (char *)NULL);
        _exit(4);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void) {
    struct sigaction sa = {0};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    CHECK_OK(sigaction(SIGSEGV, &sa, NULL));
    /* The sandbox may not serve /proc/self/mem (ENOENT); where it does, a
     * read past the end fails as Linux's does. */
    int mem = open("/proc/self/mem", O_RDONLY);
    CHECK(mem >= 0 || errno == ENOENT);
    char *own = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(own != MAP_FAILED);
    own[0] = 42;
    int shm = shmget(IPC_PRIVATE, PAGE, 0600);
    CHECK(shm >= 0);

    uintptr_t first_enomem = 0;
    int readable_pages = 0;
    for (uintptr_t a = END - PAGES * PAGE; a < END; a += PAGE) {
        if (listed(a)) {
            CHECK(first_enomem == 0); /* nothing listed above the end */
            continue;
        }
        void *p = mmap((void *)a, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != MAP_FAILED) {
            /* An ordinary free page below the end: usable. */
            CHECK(first_enomem == 0);
            CHECK_EQ((uintptr_t)p, a);
            *(volatile char *)p = 1;
            CHECK_OK(munmap(p, PAGE));
            /* mremap of our page onto it works as well; move it back. */
            void *q = mremap(own, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)a);
            CHECK_EQ((uintptr_t)q, a);
            CHECK_EQ(((char *)q)[0], 42);
            own = mremap(q, PAGE, PAGE, MREMAP_MAYMOVE);
            CHECK(own != MAP_FAILED);
            CHECK_EQ(own[0], 42);
            continue;
        }
        /* Past the end: every call answers as for any address outside. */
        CHECK_EQ(errno, ENOMEM);
        if (first_enomem == 0)
            first_enomem = a;
        CHECK_ERR(mmap((void *)a, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), ENOMEM);
        CHECK_ERR(munmap((void *)a, PAGE), EINVAL);
        CHECK_ERR(mremap(own, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)a), EINVAL);
        CHECK_ERR(mremap((void *)a, PAGE, 2 * PAGE, MREMAP_MAYMOVE), EFAULT);
        CHECK_ERR(madvise((void *)a, PAGE, MADV_DONTNEED), ENOMEM);
        CHECK_ERR(madvise((void *)a, PAGE, MADV_FREE), ENOMEM);
        CHECK_ERR(mprotect((void *)a, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC), ENOMEM);
        unsigned char vec;
        CHECK_ERR(mincore((void *)a, PAGE, &vec), ENOMEM);
        CHECK_ERR(mlock((void *)a, PAGE), ENOMEM);
        CHECK(shmat(shm, (void *)a, 0) == (void *)-1 && errno == ENOMEM);
        CHECK(shmat(shm, (void *)a, SHM_REMAP) == (void *)-1 && errno == ENOMEM);
        char buf[8];
        if (mem >= 0)
            CHECK_ERR(pread(mem, buf, sizeof buf, (off_t)a), EIO);
        /* A load faults, except that without protection keys the
         * platform's one execute-only page reads (its code is public). */
        int code = load(a);
        if (code != SEGV_MAPERR) {
            CHECK(code == 0 && !have_pkeys());
            CHECK(++readable_pages == 1);
        }
        CHECK_EQ(own[0], 42);
    }
    CHECK(first_enomem != 0);
    /* A range that ends past the end is refused whole. */
    CHECK_ERR(madvise((void *)(first_enomem - PAGE), 2 * PAGE, MADV_DONTNEED), ENOMEM);
    CHECK_OK(shmctl(shm, IPC_RMID, NULL));
    still_works();
    return 0;
}
