/* sync_file_range.c — sync_file_range(2) checks its arguments as Linux's
 * ksys_sync_file_range: EBADF for a bad or O_PATH descriptor, then EINVAL
 * for unknown flags or a negative or overflowing range, then ESPIPE for
 * what is not a regular file, directory or link; every flag combination
 * succeeds on a regular file and a directory (PostgreSQL's
 * pg_flush_data, checkpoints). */
#include "check.h"
#include <fcntl.h>
#include <stdint.h>

int main(void) {
    const char *path = scratch_path("data");
    int fd = CHECK_OK(open(path, O_RDWR | O_CREAT, 0600));
    char block[8192];
    memset(block, 'p', sizeof block);
    CHECK_EQ(write(fd, block, sizeof block), (ssize_t)sizeof block);

    for (unsigned flags = 0; flags <= 7; flags++)
        CHECK_OK(sync_file_range(fd, 0, 0, flags));
    CHECK_OK(sync_file_range(fd, 4096, 4096, SYNC_FILE_RANGE_WRITE));
    CHECK_OK(sync_file_range(fd, 1 << 30, 0, SYNC_FILE_RANGE_WRITE)); /* past the end */

    CHECK_ERR(sync_file_range(fd, 0, 0, 8), EINVAL);
    CHECK_ERR(sync_file_range(fd, -1, 0, SYNC_FILE_RANGE_WRITE), EINVAL);
    CHECK_ERR(sync_file_range(fd, 0, -2, SYNC_FILE_RANGE_WRITE), EINVAL);
    CHECK_ERR(sync_file_range(fd, INT64_MAX, 1, SYNC_FILE_RANGE_WRITE), EINVAL);

    CHECK_ERR(sync_file_range(-1, 0, 0, SYNC_FILE_RANGE_WRITE), EBADF);
    CHECK_ERR(sync_file_range(-1, 0, 0, 8), EBADF); /* the descriptor first */
    int opath = CHECK_OK(open(path, O_PATH));
    CHECK_ERR(sync_file_range(opath, 0, 0, SYNC_FILE_RANGE_WRITE), EBADF);

    int p[2];
    CHECK_OK(pipe(p));
    CHECK_ERR(sync_file_range(p[0], 0, 0, SYNC_FILE_RANGE_WRITE), ESPIPE);
    CHECK_ERR(sync_file_range(p[1], 0, 0, 8), EINVAL); /* flags before the type */

    int dir = CHECK_OK(open(scratch_dir(), O_RDONLY | O_DIRECTORY));
    CHECK_OK(sync_file_range(dir, 0, 0, SYNC_FILE_RANGE_WRITE));

    /* A read-only descriptor may start writeback too. */
    int ro = CHECK_OK(open(path, O_RDONLY));
    CHECK_OK(sync_file_range(ro, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER));
    return 0;
}
