/* mmap_shared_file.c — MAP_SHARED mappings of a regular file. */
#include "check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define PG 4096UL

int main(void) {
    /* A file-backed MAP_SHARED mapping: stores reach the file and writes to
     * the file are visible in the mapping. */
    const char *f = scratch_path("data");
    int fd = CHECK_OK(open(f, O_CREAT | O_RDWR, 0644));
    static unsigned char fdata[2 * 4096];
    memset(fdata, 1, sizeof fdata);
    CHECK_EQ(write(fd, fdata, sizeof fdata), sizeof fdata);
    unsigned char chk[16];
    unsigned char *m;
    /* file-backed MAP_SHARED: stores reach the file. */
    m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    memcpy(m, "SHARED", 6);
    CHECK_OK(msync(m, PG, MS_SYNC));
    CHECK_EQ(pread(fd, chk, 6, 0), 6);
    CHECK_MEM(chk, "SHARED", 6);
    /* and writes to the file are visible in the mapping. */
    CHECK_EQ(pwrite(fd, "viaFD", 5, 10), 5);
    CHECK_MEM(m + 10, "viaFD", 5);
    CHECK_OK(munmap(m, PG));
    CHECK_OK(close(fd));
    return 0;
}
