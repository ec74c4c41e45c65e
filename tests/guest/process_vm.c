/* process_vm.c — process_vm_readv(2) and process_vm_writev(2) between
 * processes, as Linux: scatter/gather across local and remote iovecs,
 * partial transfers stopping at the first bad remote page, EFAULT when
 * nothing moved, EINVAL for flags and iovec counts, ESRCH, and ptrace's
 * access check (same ids, a dumpable target holding no permitted capability
 * the caller lacks, or CAP_SYS_PTRACE), and the dumpable flag cleared when
 * effective ids change or permitted capabilities grow. */
#include "check.h"
#include <signal.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>

static char target_buf[64];
static char written[32];

/* Byte over a pipe: a command or an acknowledgement. */
static void put(int fd, char c) { CHECK_EQ(write(fd, &c, 1), 1); }
static char get(int fd) {
    char c = 0;
    CHECK_EQ(read(fd, &c, 1), 1);
    return c;
}

static int wait_status(pid_t pid) {
    int st = 0;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void check_transfers(void) {
    int to_child[2], to_parent[2];
    CHECK_OK(pipe(to_child));
    CHECK_OK(pipe(to_parent));
    /* Two pages; the second is unmapped in the child, the first filled. */
    char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(pages != MAP_FAILED && ro != MAP_FAILED);
    pid_t child = CHECK_OK(fork());
    if (child == 0) {
        strcpy(target_buf, "0123456789abcdefghijklmnopqrstuvwxyz");
        memset(pages, 'p', 4096);
        CHECK_OK(munmap(pages + 4096, 4096));
        put(to_parent[1], 'r');
        get(to_child[0]); /* the parent is done */
        if (memcmp(written, "written by the parent", 21) != 0)
            FAILF("child sees \"%.21s\"", written);
        if (memcmp(target_buf, "0123WXYZ", 8) != 0)
            FAILF("child's buffer \"%.8s\"", target_buf);
        _exit(0);
    }
    CHECK_EQ(get(to_parent[0]), 'r');

    /* Scatter: remote [0,10) and [20,26) into local 4 + 12 bytes. */
    char a[4], b[12];
    struct iovec local[2] = {{a, sizeof a}, {b, sizeof b}};
    struct iovec remote[2] = {{target_buf, 10}, {target_buf + 20, 6}};
    CHECK_EQ(process_vm_readv(child, local, 2, remote, 2, 0), 16);
    CHECK_MEM(a, "0123", 4);
    CHECK_MEM(b, "456789klmnop", 12);

    /* The local side bounds the transfer. */
    char small[5];
    struct iovec l1 = {small, sizeof small};
    CHECK_EQ(process_vm_readv(child, &l1, 1, remote, 2, 0), 5);
    CHECK_MEM(small, "01234", 5);

    /* A remote range running into the unmapped page stops at its end. */
    char big[8192];
    struct iovec lbig = {big, sizeof big};
    struct iovec straddle = {pages + 4000, 200};
    CHECK_EQ(process_vm_readv(child, &lbig, 1, &straddle, 1, 0), 96);
    CHECK(big[0] == 'p' && big[95] == 'p');
    /* A bad second remote iovec: the first one's bytes. */
    struct iovec then_bad[2] = {{target_buf, 10}, {pages + 4096, 10}};
    CHECK_EQ(process_vm_readv(child, &lbig, 1, then_bad, 2, 0), 10);
    /* Nothing readable: EFAULT. */
    struct iovec bad = {pages + 4096, 10};
    CHECK_ERR(process_vm_readv(child, &lbig, 1, &bad, 1, 0), EFAULT);
    struct iovec lbad = {(void *)8, 10};
    CHECK_ERR(process_vm_readv(child, &lbad, 1, remote, 1, 0), EFAULT);
    /* Remote length 0 moves nothing. */
    struct iovec none = {target_buf, 0};
    CHECK_EQ(process_vm_readv(child, &lbig, 1, &none, 1, 0), 0);

    /* Writes: gather two local pieces into the child. */
    struct iovec wl[2] = {{"written by ", 11}, {"the parent", 10}};
    struct iovec wr = {written, 21};
    CHECK_EQ(process_vm_writev(child, wl, 2, &wr, 1, 0), 21);
    struct iovec wl2 = {"WXYZ", 4};
    struct iovec wr2 = {target_buf + 4, 4};
    CHECK_EQ(process_vm_writev(child, &wl2, 1, &wr2, 1, 0), 4);
    /* A read-only remote page is not written (no FOLL_FORCE). */
    struct iovec wro = {ro, 4};
    CHECK_ERR(process_vm_writev(child, &wl2, 1, &wro, 1, 0), EFAULT);
    CHECK_ERR(process_vm_writev(child, &wl2, 1, &bad, 1, 0), EFAULT);

    /* Arguments. */
    CHECK_ERR(process_vm_readv(child, local, 2, remote, 2, 1), EINVAL);
    CHECK_ERR(process_vm_readv(child, local, 1025, remote, 2, 0), EINVAL);
    CHECK_ERR(process_vm_readv(child, local, 2, remote, 1025, 0), EINVAL);
    CHECK_ERR(process_vm_readv(child, (struct iovec *)8, 1, remote, 1, 0), EFAULT);
    CHECK_ERR(process_vm_readv(child, local, 1, (struct iovec *)8, 1, 0), EFAULT);
    struct iovec neg = {target_buf, (size_t)-1};
    CHECK_ERR(process_vm_readv(child, local, 1, &neg, 1, 0), EINVAL);
    CHECK_ERR(process_vm_readv(child, &neg, 1, remote, 1, 0), EINVAL);
    CHECK_ERR(process_vm_readv(0x3fffffff, local, 2, remote, 2, 0), ESRCH);
    /* An empty local side returns 0 before the target is looked up. */
    struct iovec empty = {a, 0};
    CHECK_EQ(process_vm_readv(0x3fffffff, &empty, 1, remote, 2, 0), 0);
    CHECK_EQ(process_vm_readv(child, local, 0, remote, 2, 0), 0);

    /* One's own memory. */
    char self_src[] = "self", self_dst[4];
    struct iovec sl = {self_dst, 4}, sr = {self_src, 4};
    CHECK_EQ(process_vm_readv(getpid(), &sl, 1, &sr, 1, 0), 4);
    CHECK_MEM(self_dst, "self", 4);

    put(to_child[1], 'd');
    CHECK_EQ(wait_status(child), 0);
    munmap(pages, 4096);
    munmap(ro, 4096);
}

/* An unprivileged reader: its own uid's dumpable processes only. */
static void check_permissions(void) {
    if (geteuid() != 0)
        return; /* needs to make processes of another uid */
    int cmd[2], ack[2];
    CHECK_OK(pipe(cmd));
    CHECK_OK(pipe(ack));
    pid_t target = CHECK_OK(fork());
    if (target == 0) {
        strcpy(target_buf, "target");
        CHECK_OK(setresuid(65534, 65534, 65534));
        for (;;) {
            char c = get(cmd[0]);
            if (c == 'q')
                _exit(0);
            CHECK_OK(prctl(PR_SET_DUMPABLE, c == '1'));
            put(ack[1], 'k');
        }
    }
    put(cmd[1], '1');
    CHECK_EQ(get(ack[0]), 'k');
    pid_t parent = getpid();
    pid_t reader = CHECK_OK(fork());
    if (reader == 0) {
        CHECK_OK(setresuid(65534, 65534, 65534));
        char buf[6];
        struct iovec l = {buf, 6}, r = {target_buf, 6};
        CHECK_EQ(process_vm_readv(target, &l, 1, &r, 1, 0), 6);
        CHECK_MEM(buf, "target", 6);
        CHECK_ERR(process_vm_readv(parent, &l, 1, &r, 1, 0), EPERM);
        CHECK_ERR(process_vm_writev(parent, &l, 1, &r, 1, 0), EPERM);
        /* Not dumpable: refused to the same uid. */
        put(cmd[1], '0');
        CHECK_EQ(get(ack[0]), 'k');
        CHECK_ERR(process_vm_readv(target, &l, 1, &r, 1, 0), EPERM);
        _exit(0);
    }
    CHECK_EQ(wait_status(reader), 0);
    /* Root (CAP_SYS_PTRACE) reads a non-dumpable process of another uid. */
    char buf[6];
    struct iovec l = {buf, 6}, r = {target_buf, 6};
    CHECK_EQ(process_vm_readv(target, &l, 1, &r, 1, 0), 6);
    CHECK_MEM(buf, "target", 6);
    put(cmd[1], 'q');
    CHECK_EQ(wait_status(target), 0);
}

/* Drops every capability (capset; no libcap in a static guest). */
static void drop_all_caps(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    CHECK_OK(syscall(SYS_capset, &h, d));
}

/* A process that kept its capabilities across a uid change is not
 * readable by a capability-less one of the same uid; and changing
 * effective ids or gaining permitted capabilities makes a process
 * non-dumpable (commit_creds), while a "change" to the same ids or a loss
 * of capabilities does not. */
static void check_kept_caps(void) {
    if (geteuid() != 0)
        return;
    int cmd[2], ack[2];
    CHECK_OK(pipe(cmd));
    CHECK_OK(pipe(ack));
    pid_t target = CHECK_OK(fork());
    if (target == 0) {
        strcpy(target_buf, "capped");
        CHECK_EQ(prctl(PR_GET_DUMPABLE), 1);
        CHECK_OK(setresuid(-1, -1, -1));
        CHECK_OK(setresuid(0, 0, 0));
        CHECK_EQ(prctl(PR_GET_DUMPABLE), 1); /* nothing changed */
        CHECK_OK(prctl(PR_SET_KEEPCAPS, 1));
        CHECK_OK(setresuid(65534, 65534, 65534));
        CHECK_EQ(prctl(PR_GET_DUMPABLE), 0); /* the euid changed */
        CHECK_OK(prctl(PR_SET_DUMPABLE, 1));
        put(ack[1], 'k');
        for (;;) {
            char c = get(cmd[0]);
            if (c == 'q')
                _exit(0);
            /* 'c': give up the kept capabilities. */
            drop_all_caps();
            CHECK_EQ(prctl(PR_GET_DUMPABLE), 1); /* losing caps keeps it */
            put(ack[1], 'k');
        }
    }
    CHECK_EQ(get(ack[0]), 'k');
    pid_t reader = CHECK_OK(fork());
    if (reader == 0) {
        CHECK_OK(setresuid(65534, 65534, 65534));
        CHECK_EQ(prctl(PR_GET_DUMPABLE), 0);
        char buf[6];
        struct iovec l = {buf, 6}, r = {target_buf, 6};
        CHECK_ERR(process_vm_readv(target, &l, 1, &r, 1, 0), EPERM);
        CHECK_ERR(process_vm_writev(target, &l, 1, &r, 1, 0), EPERM);
        put(cmd[1], 'c');
        CHECK_EQ(get(ack[0]), 'k');
        CHECK_EQ(process_vm_readv(target, &l, 1, &r, 1, 0), 6);
        CHECK_MEM(buf, "capped", 6);
        _exit(0);
    }
    CHECK_EQ(wait_status(reader), 0);
    put(cmd[1], 'q');
    CHECK_EQ(wait_status(target), 0);
}

int main(void) {
    check_transfers();
    check_permissions();
    check_kept_caps();
    return 0;
}
