/* mlock.c — memory locks as Linux accounts them: mlock, mlock2
 * (MLOCK_ONFAULT), munlock, mlockall (MCL_CURRENT, MCL_FUTURE), munlockall
 * and MAP_LOCKED; VmLck in /proc/self/status; what locked pages refuse
 * (msync MS_INVALIDATE: EBUSY, madvise MADV_DONTNEED: EINVAL); locks not
 * inherited by fork; and RLIMIT_MEMLOCK without CAP_IPC_LOCK (EPERM at
 * zero, ENOMEM for mlock, EAGAIN for MAP_LOCKED and mremap). */
#include "check.h"

#include <linux/capability.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define PG 4096L

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

static int mlock2_(void *addr, size_t len, unsigned flags) {
    return syscall(SYS_mlock2, addr, len, flags);
}

/* Linux's own test of a lock: msync(MS_INVALIDATE) refuses locked pages. */
static int locked(void *p) {
    if (msync(p, PG, MS_ASYNC | MS_INVALIDATE) == 0)
        return 0;
    CHECK_EQ(errno, EBUSY);
    return 1;
}

/* VmLck of /proc/self/status, in kB. */
static long vmlck_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

static void *anon(size_t len, int prot, int flags) {
    void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    CHECK(p != MAP_FAILED);
    return p;
}

/* Drops CAP_IPC_LOCK from the effective set (in a child). */
static void drop_ipc_lock(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    CHECK_OK(syscall(SYS_capget, &h, d));
    d[0].effective &= ~(1u << CAP_IPC_LOCK);
    CHECK_OK(syscall(SYS_capset, &h, d));
}

static void set_memlock(rlim_t cur) {
    struct rlimit r;
    CHECK_OK(getrlimit(RLIMIT_MEMLOCK, &r));
    r.rlim_cur = cur;
    CHECK_OK(setrlimit(RLIMIT_MEMLOCK, &r));
}

static void in_child(void (*f)(void)) {
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        f();
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void limited(void) {
    drop_ipc_lock();
    char *p = anon(2 * PG, PROT_READ | PROT_WRITE, 0);
    set_memlock(0);
    CHECK_ERR(mlock(p, PG), EPERM);
    CHECK_ERR(mlockall(MCL_CURRENT), EPERM);
    CHECK(mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0) == MAP_FAILED);
    CHECK_EQ(errno, EPERM);
    CHECK_OK(munlock(p, PG)); /* unlocking needs no limit */
    set_memlock(PG);
    CHECK_ERR(mlock(p, 2 * PG), ENOMEM);
    CHECK(!locked(p));
    CHECK_OK(mlock(p, PG));
    CHECK_OK(mlock(p, PG)); /* pages locked already count once */
    CHECK_ERR(mlock(p + PG, PG), ENOMEM);
    CHECK(mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0) == MAP_FAILED);
    CHECK_EQ(errno, EAGAIN);
    CHECK(mremap(p, PG, 2 * PG, MREMAP_MAYMOVE) == MAP_FAILED);
    CHECK_EQ(errno, EAGAIN);
    CHECK_OK(munlock(p, 2 * PG));
    CHECK_OK(mlock(p + PG, PG));
}

static void child_of_locked(void) {
    /* Set by the parent: locks are not inherited. */
    CHECK_EQ(vmlck_kb(), 0);
}

static void future(void) {
    char *before = anon(PG, PROT_READ | PROT_WRITE, 0);
    CHECK_OK(mlockall(MCL_FUTURE));
    CHECK(!locked(before));
    char *after = anon(PG, PROT_READ | PROT_WRITE, 0);
    CHECK(locked(after));
    CHECK_EQ(vmlck_kb(), 4);
    CHECK_OK(munlockall());
    CHECK(!locked(after));
    char *later = anon(PG, PROT_READ | PROT_WRITE, 0);
    CHECK(!locked(later));
    CHECK_EQ(vmlck_kb(), 0);
    CHECK_OK(mlockall(MCL_FUTURE | MCL_ONFAULT));
    char *onfault = anon(PG, PROT_READ | PROT_WRITE, 0);
    CHECK(locked(onfault));
    CHECK_OK(munlockall());
}

int main(void) {
    CHECK_EQ(vmlck_kb(), 0);
    char *p = anon(4 * PG, PROT_READ | PROT_WRITE, 0);
    CHECK(!locked(p));

    /* mlock rounds the range out to pages. */
    CHECK_OK(mlock(p + 100, PG));
    CHECK(locked(p) && locked(p + PG) && !locked(p + 2 * PG));
    CHECK_EQ(vmlck_kb(), 8);
    CHECK_ERR(msync(p, PG, MS_SYNC | MS_INVALIDATE), EBUSY);
    CHECK_OK(msync(p, PG, MS_SYNC));
    CHECK_ERR(madvise(p, PG, MADV_DONTNEED), EINVAL);
    CHECK_ERR(madvise(p, 4 * PG, MADV_DONTNEED), EINVAL);
    in_child(child_of_locked);
    CHECK(locked(p));
    CHECK_OK(munlock(p, PG));
    CHECK(!locked(p) && locked(p + PG));
    CHECK_EQ(vmlck_kb(), 4);
    CHECK_OK(munlock(p, 4 * PG));
    CHECK_EQ(vmlck_kb(), 0);

    /* Unmapped pages: ENOMEM; the areas before the hole keep the lock. */
    CHECK_OK(munmap(p + 2 * PG, PG));
    CHECK_ERR(mlock(p, 4 * PG), ENOMEM);
    CHECK(locked(p) && locked(p + PG) && !locked(p + 3 * PG));
    CHECK_ERR(munlock(p, 4 * PG), ENOMEM);
    CHECK(!locked(p));
    CHECK_OK(mlock(p, 0));
    CHECK_OK(mlock(p, (size_t)-100)); /* rounds to nothing */

    /* A page without access cannot be populated: ENOMEM, yet it is locked. */
    char *none = anon(PG, PROT_NONE, 0);
    CHECK_ERR(mlock(none, PG), ENOMEM);
    CHECK(locked(none));
    CHECK_OK(munmap(none, PG));

    /* mlock2 */
    CHECK_ERR(mlock2_(p, PG, 2), EINVAL);
    CHECK_OK(mlock2_(p, PG, MLOCK_ONFAULT));
    CHECK(locked(p));
    CHECK_OK(mlock2_(p + PG, PG, 0));
    CHECK_EQ(vmlck_kb(), 8);
    CHECK_OK(munlock(p, 2 * PG));

    /* MAP_LOCKED, kept by mremap (which locks the growth too). */
    char *m = anon(PG, PROT_READ | PROT_WRITE, MAP_LOCKED);
    CHECK(locked(m));
    char *moved = mremap(m, PG, 3 * PG, MREMAP_MAYMOVE);
    CHECK(moved != MAP_FAILED);
    CHECK(locked(moved) && locked(moved + 2 * PG));
    CHECK_EQ(vmlck_kb(), 12);
    CHECK_OK(munmap(moved, 3 * PG));
    CHECK_EQ(vmlck_kb(), 0);

    /* mlockall's flags. */
    CHECK_ERR(mlockall(0), EINVAL);
    CHECK_ERR(mlockall(MCL_ONFAULT), EINVAL);
    CHECK_ERR(mlockall(8), EINVAL);
    in_child(future);
    in_child(limited);
    puts("mlock: ok");
    return 0;
}
