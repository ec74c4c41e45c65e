/* mempolicy.c — NUMA memory policies on a machine with one node:
 * set_mempolicy and get_mempolicy (the thread's policy, MPOL_F_NODE,
 * MPOL_F_ADDR, MPOL_F_MEMS_ALLOWED, node mask sizes) and mbind (a policy
 * per mapping), with Linux's errors. Assumes one NUMA node, as the
 * sandbox has and as this machine has. */
#include "check.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define MPOL_DEFAULT 0
#define MPOL_PREFERRED 1
#define MPOL_BIND 2
#define MPOL_INTERLEAVE 3
#define MPOL_LOCAL 4
#define MPOL_F_STATIC_NODES (1 << 15)
#define MPOL_F_RELATIVE_NODES (1 << 14)
#define MPOL_F_NODE 1
#define MPOL_F_ADDR 2
#define MPOL_F_MEMS_ALLOWED 4
#define MPOL_MF_STRICT 1

static long get(int *mode, uint64_t *mask, unsigned long maxnode, void *addr, unsigned long flags) {
    return syscall(SYS_get_mempolicy, mode, mask, maxnode, addr, flags);
}

static long set(int mode, uint64_t *mask, unsigned long maxnode) {
    return syscall(SYS_set_mempolicy, mode, mask, maxnode);
}

static long bind(void *addr, unsigned long len, int mode, uint64_t *mask, unsigned long maxnode, unsigned flags) {
    return syscall(SYS_mbind, addr, len, mode, mask, maxnode, flags);
}

static void expect_policy(int want_mode, uint64_t want_mask) {
    int mode = -1;
    uint64_t mask = 0xff;
    CHECK_OK(get(&mode, &mask, 64, NULL, 0));
    CHECK_EQ(mode, want_mode);
    CHECK_EQ(mask, want_mask);
}

int main(void) {
    uint64_t one = 1, none = 0, two = 2;
    expect_policy(MPOL_DEFAULT, 0);
    CHECK_OK(get(NULL, NULL, 0, NULL, 0));

    /* The thread's policy. */
    CHECK_OK(set(MPOL_BIND, &one, 64));
    expect_policy(MPOL_BIND, 1);
    CHECK_OK(set(MPOL_INTERLEAVE | MPOL_F_STATIC_NODES, &one, 64));
    expect_policy(MPOL_INTERLEAVE | MPOL_F_STATIC_NODES, 1);
    int node = -1;
    CHECK_OK(get(&node, NULL, 0, NULL, MPOL_F_NODE));
    CHECK_EQ(node, 0);
    CHECK_OK(set(MPOL_PREFERRED, NULL, 0));
    expect_policy(MPOL_LOCAL, 0);
    CHECK_ERR(get(&node, NULL, 0, NULL, MPOL_F_NODE), EINVAL);
    CHECK_OK(set(MPOL_DEFAULT, NULL, 1));
    expect_policy(MPOL_DEFAULT, 0);

    /* Errors. */
    CHECK_ERR(set(7439, &one, 64), EINVAL);
    CHECK_ERR(set(MPOL_DEFAULT, &one, 0), EINVAL);
    CHECK_ERR(set(MPOL_DEFAULT, &one, 64), EINVAL);
    CHECK_ERR(set(MPOL_DEFAULT | MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES, &one, 64), EINVAL);
    CHECK_ERR(set(MPOL_INTERLEAVE, &none, 64), EINVAL);
    CHECK_ERR(set(MPOL_BIND, NULL, 1), EINVAL);
    CHECK_ERR(set(MPOL_BIND, &two, 64), EINVAL); /* node 1 is not online */
    CHECK_ERR(set(MPOL_LOCAL, &one, 64), EINVAL);
    CHECK_ERR(set(MPOL_BIND, (uint64_t *)8, 64), EFAULT);
    CHECK_ERR(get(&node, &one, 0, NULL, 0), EINVAL);
    CHECK_ERR(get(&node, NULL, 0, NULL, 8), EINVAL);
    CHECK_ERR(get(&node, NULL, 0, &node, 0), EINVAL);
    CHECK_ERR(get((int *)8, NULL, 0, NULL, 0), EFAULT);
    expect_policy(MPOL_DEFAULT, 0);

    /* The nodes allowed. */
    uint64_t mask = 0;
    CHECK_OK(get(NULL, &mask, 64, NULL, MPOL_F_MEMS_ALLOWED));
    CHECK_EQ(mask, 1);
    CHECK_ERR(get(NULL, &mask, 64, NULL, MPOL_F_MEMS_ALLOWED | MPOL_F_ADDR), EINVAL);
    /* A longer mask is cleared past the first word. */
    uint64_t wide[4] = {0, 7, 7, 7};
    CHECK_OK(get(NULL, wide, 256, NULL, MPOL_F_MEMS_ALLOWED));
    CHECK(wide[0] == 1 && wide[1] == 0 && wide[2] == 0 && wide[3] == 0);

    /* mbind: a policy per mapping, reported by MPOL_F_ADDR. */
    char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    int mode = -1;
    CHECK_OK(get(&mode, NULL, 0, p, MPOL_F_ADDR));
    CHECK_EQ(mode, MPOL_DEFAULT);
    CHECK_OK(bind(p + 4096, 4096, MPOL_BIND, &one, 64, MPOL_MF_STRICT));
    CHECK_OK(get(&mode, &mask, 64, p + 4096, MPOL_F_ADDR));
    CHECK(mode == MPOL_BIND && mask == 1);
    CHECK_OK(get(&mode, NULL, 0, p, MPOL_F_ADDR));
    CHECK_EQ(mode, MPOL_DEFAULT);
    CHECK_OK(get(&mode, NULL, 0, p + 4096, MPOL_F_ADDR | MPOL_F_NODE));
    CHECK_EQ(mode, 0);
    CHECK_OK(bind(p + 4096, 4096, MPOL_DEFAULT, NULL, 0, 0));
    CHECK_OK(get(&mode, NULL, 0, p + 4096, MPOL_F_ADDR));
    CHECK_EQ(mode, MPOL_DEFAULT);
    CHECK_ERR(bind(p + 1, 4096, MPOL_BIND, &one, 64, 0), EINVAL);
    CHECK_ERR(bind(p, 4096, MPOL_BIND, &one, 64, 8), EINVAL);
    CHECK_ERR(bind(p, 4096, MPOL_BIND, &none, 64, 0), EINVAL);
    CHECK_OK(bind(p, 0, MPOL_BIND, &one, 64, 0));
    CHECK_OK(munmap(p + 4096, 4096));
    CHECK_ERR(bind(p, 3 * 4096, MPOL_BIND, &one, 64, 0), EFAULT);
    CHECK_ERR(get(&mode, NULL, 0, p + 4096, MPOL_F_ADDR), EFAULT);
    puts("mempolicy: ok");
    return 0;
}
