/* compat_syscall: a 32-bit entry point (int 0x80) must never be read with
 * the 64-bit table. The hole: `int 0x80` with eax=39 (i386 mkdir) returned
 * the pid (x86-64's 39 is getpid). Linux with IA32 emulation serves the
 * i386 call (the directory appears); husk, like gVisor, answers ENOSYS.
 * Either is accepted; the x86-64 reading of the number never is.
 */
#include "check.h"
#include <sys/stat.h>

static long int80(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
    return ret;
}

int main(void) {
    /* A path in the low 4 GiB, where a 32-bit pointer can name it. */
    static char path[64];
    snprintf(path, sizeof path, "/tmp/compat-%d", getpid());
    CHECK((unsigned long)path < 0x100000000UL);
    long r = int80(39, (long)path, 0755, 0); /* i386 mkdir; x86-64 getpid */
    CHECK(r != getpid());
    struct stat st;
    if (r == 0) {
        CHECK_OK(stat(path, &st));
        CHECK(S_ISDIR(st.st_mode));
        CHECK_OK(rmdir(path));
    } else {
        CHECK_EQ(r, -ENOSYS);
        CHECK_ERR(stat(path, &st), ENOENT);
    }
    /* i386 20 is getpid; x86-64 20 is writev(fd 1, iov, count). */
    r = int80(20, 1, 0, 0);
    CHECK(r == getpid() || r == -ENOSYS);
    /* i386 37 is kill; x86-64 37 is alarm(seconds). */
    r = int80(37, getpid(), 0, 0);
    CHECK(r == 0 || r == -ENOSYS);
    CHECK_EQ(alarm(0), 0); /* no alarm was set */
    return 0;
}
