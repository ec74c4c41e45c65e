/* hugetlb.c — huge page requests without a huge page pool, as Linux with
 * vm.nr_hugepages 0: an anonymous MAP_HUGETLB mapping and a SHM_HUGETLB
 * segment fail with ENOMEM (PostgreSQL's huge_pages=try then falls back
 * to normal pages), a MAP_HUGETLB mapping of a file not on hugetlbfs
 * with EINVAL. Skipped natively when the host has a pool. */
#include "check.h"
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>

int main(void) {
    char buf[64];
    if (read_file("/proc/sys/vm/nr_hugepages", buf, sizeof buf) > 0 && atol(buf) > 0) {
        printf("the host reserves huge pages: nothing to check\n");
        return 0;
    }
    size_t len = 16 << 20;
    CHECK(mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0) == MAP_FAILED);
    CHECK_EQ(errno, ENOMEM);
    CHECK(mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0) == MAP_FAILED);
    CHECK_EQ(errno, ENOMEM);
    CHECK_ERR(shmget(IPC_PRIVATE, len, IPC_CREAT | SHM_HUGETLB | 0600), ENOMEM);

    int fd = CHECK_OK(open(scratch_path("f"), O_RDWR | O_CREAT, 0600));
    CHECK_OK(ftruncate(fd, len));
    CHECK(mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_HUGETLB, fd, 0) == MAP_FAILED);
    CHECK_EQ(errno, EINVAL);

    /* Without the flag the same requests succeed. */
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    CHECK_OK(munmap(p, len));
    return 0;
}
