/* proc_maps.c — /proc/self/maps lines of anonymous mappings (the fields
 * end with a space; a name starts at column 73; a shared anonymous
 * mapping is an unlinked /dev/zero) and /proc/self/smaps's per-mapping
 * memory fields.
 */
#include "check.h"

#include <sys/mman.h>

static char text[1 << 20];

/* The line of `file` that starts with `prefix` followed by `n` more
 * lines, copied to `out`; 0 if there is none. */
static int block_of(const char *file, const char *prefix, int n, char *out, size_t cap) {
    CHECK(read_file(file, text, sizeof text) > 0);
    char *p = strstr(text, prefix);
    if (!p || (p != text && p[-1] != '\n'))
        return 0;
    char *end = p;
    for (int i = 0; i <= n && end; i++) {
        end = strchr(end, '\n');
        if (end)
            end++;
    }
    size_t len = end ? (size_t)(end - p) : strlen(p);
    CHECK(len < cap);
    memcpy(out, p, len);
    out[len] = 0;
    return 1;
}

/* The value in kB of `key` in an smaps block. */
static long field_kb(const char *block, const char *key) {
    char k[64];
    snprintf(k, sizeof k, "\n%s:", key);
    const char *p = strstr(block, k);
    CHECK(p != NULL);
    char *end;
    long v = strtol(p + strlen(k), &end, 10);
    CHECK(strncmp(end, " kB\n", 4) == 0);
    return v;
}

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    char want[128], line[4096];

    char *ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(ro != MAP_FAILED);
    snprintf(want, sizeof want, "%08lx-%08lx r--p 00000000 00:00 0 \n", (unsigned long)ro,
             (unsigned long)ro + page);
    CHECK(block_of("/proc/self/maps", want, 0, line, sizeof line));
    CHECK_STR(line, want);

    char *sh = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    snprintf(want, sizeof want, "%08lx-%08lx rw-s 00000000 ", (unsigned long)sh, (unsigned long)sh + page);
    CHECK(block_of("/proc/self/maps", want, 0, line, sizeof line));
    CHECK_EQ(strlen(line), 73 + strlen("/dev/zero (deleted)\n"));
    CHECK_STR(line + 73, "/dev/zero (deleted)\n");

    /* Two touched private pages: 8 kB resident, anonymous, private dirty. */
    char *rw = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(rw != MAP_FAILED);
    rw[0] = 1;
    rw[page] = 1;
    snprintf(want, sizeof want, "%08lx-%08lx rwxp 00000000 00:00 0 \n", (unsigned long)rw,
             (unsigned long)rw + 2 * page);
    CHECK(block_of("/proc/self/smaps", want, 12, line, sizeof line));
    CHECK(strncmp(line + strlen(want), "Size:                  8 kB\nKernelPageSize:        4 kB\nMMUPageSize:           4 kB\n", 84) == 0);
    CHECK_EQ(field_kb(line, "Rss"), 8);
    CHECK_EQ(field_kb(line, "Pss"), 8);
    CHECK_EQ(field_kb(line, "Shared_Clean"), 0);
    CHECK_EQ(field_kb(line, "Shared_Dirty"), 0);
    CHECK_EQ(field_kb(line, "Private_Clean"), 0);
    CHECK_EQ(field_kb(line, "Private_Dirty"), 8);

    /* An untouched one holds nothing yet. */
    char *lazy = mmap(NULL, 4 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(lazy != MAP_FAILED);
    snprintf(want, sizeof want, "%08lx-%08lx r--p 00000000 00:00 0 \n", (unsigned long)lazy,
             (unsigned long)lazy + 4 * page);
    CHECK(block_of("/proc/self/smaps", want, 12, line, sizeof line));
    CHECK_EQ(field_kb(line, "Size"), 16);
    CHECK_EQ(field_kb(line, "Rss"), 0);
    CHECK_EQ(field_kb(line, "Anonymous"), 0);
    return 0;
}
