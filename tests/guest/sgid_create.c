/* sgid_create.c — a file made in a set-group-ID directory gets the
 * directory's group, and so loses a requested group-executable S_ISGID
 * when its maker is not in that group and lacks CAP_FSETID (Linux's
 * mode_strip_sgid, for open(O_CREAT), O_TMPFILE and mknod alike);
 * directories inherit S_ISGID regardless. And linkat(AT_EMPTY_PATH)
 * needs CAP_DAC_READ_SEARCH: ENOENT without it (linkat(2)). Run as root. */
#include "check.h"
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define GROUP 4242

static char dir[128];
static char paths[4][192];

/* dir/name, in one of a few buffers so that a call may take two. */
static const char *in_dir(const char *name) {
    static unsigned next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

static void drop_cap(int cap) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];
    CHECK_OK(syscall(SYS_capget, &h, caps));
    caps[cap / 32].effective &= ~(1u << (cap % 32));
    CHECK_OK(syscall(SYS_capset, &h, caps));
}

static int run_child(int (*body)(void)) {
    pid_t c = CHECK_OK(fork());
    if (c == 0)
        _exit(body());
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static struct stat stat_of(const char *name) {
    struct stat st;
    CHECK_OK(stat(in_dir(name), &st));
    return st;
}

/* Not in GROUP, without CAP_FSETID. */
static int outsider(void) {
    CHECK_OK(setgroups(0, NULL));
    drop_cap(CAP_FSETID);
    CHECK_OK(close(CHECK_OK(open(in_dir("f"), O_CREAT | O_WRONLY, 02755))));
    struct stat st = stat_of("f");
    CHECK_EQ(st.st_gid, GROUP);
    CHECK_EQ(st.st_mode & 07777, 0755);
    /* Without S_IXGRP the bit stays (it never made a set-group-ID program). */
    CHECK_OK(close(CHECK_OK(open(in_dir("g"), O_CREAT | O_WRONLY, 02745))));
    CHECK_EQ(stat_of("g").st_mode & 07777, 02745);
    CHECK_OK(mknod(in_dir("n"), S_IFREG | 02755, 0));
    CHECK_EQ(stat_of("n").st_mode & 07777, 0755);
    int t = CHECK_OK(open(dir, O_TMPFILE | O_WRONLY, 02755));
    CHECK_OK(fstat(t, &st));
    CHECK_EQ(st.st_gid, GROUP);
    CHECK_EQ(st.st_mode & 07777, 0755);
    CHECK_OK(close(t));
    /* A directory keeps the inherited bit. */
    CHECK_OK(mkdir(in_dir("sub"), 02755));
    CHECK_EQ(stat_of("sub").st_mode & 07777, 02755);
    return 0;
}

/* In GROUP (a supplementary group), without CAP_FSETID. */
static int member(void) {
    gid_t g = GROUP;
    CHECK_OK(setgroups(1, &g));
    drop_cap(CAP_FSETID);
    CHECK_OK(close(CHECK_OK(open(in_dir("m"), O_CREAT | O_WRONLY, 02755))));
    CHECK_EQ(stat_of("m").st_mode & 07777, 02755);
    return 0;
}

/* linkat(AT_EMPTY_PATH) of a descriptor opened before the drop. */
static int no_read_search(void) {
    int fd = CHECK_OK(open(in_dir("src"), O_RDONLY));
    drop_cap(CAP_DAC_READ_SEARCH);
    CHECK_ERR(linkat(fd, "", AT_FDCWD, in_dir("l1"), AT_EMPTY_PATH), ENOENT);
    CHECK_ERR(access(in_dir("l1"), F_OK), ENOENT);
    /* Without the flag the link is made as ever. */
    CHECK_OK(linkat(AT_FDCWD, in_dir("src"), AT_FDCWD, in_dir("l2"), 0));
    return 0;
}

/* argv[1]: the directory to work in (default /tmp; /var/tmp is the
 * sandbox's overlay). */
int main(int argc, char **argv) {
    umask(0);
    snprintf(dir, sizeof dir, "%s/sgid_create.XXXXXX", argc > 1 ? argv[1] : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    CHECK_OK(chown(dir, 0, GROUP));
    CHECK_OK(chmod(dir, 02777));

    CHECK_EQ(run_child(outsider), 0);
    CHECK_EQ(run_child(member), 0);

    /* With CAP_FSETID (root as it is) the bit stays. */
    CHECK_OK(close(CHECK_OK(open(in_dir("r"), O_CREAT | O_WRONLY, 02755))));
    CHECK_EQ(stat_of("r").st_mode & 07777, 02755);
    CHECK_EQ(stat_of("r").st_gid, GROUP);

    /* linkat(AT_EMPTY_PATH): allowed with CAP_DAC_READ_SEARCH. */
    CHECK_OK(close(CHECK_OK(open(in_dir("src"), O_CREAT | O_WRONLY, 0644))));
    int fd = CHECK_OK(open(in_dir("src"), O_RDONLY));
    CHECK_OK(linkat(fd, "", AT_FDCWD, in_dir("l0"), AT_EMPTY_PATH));
    CHECK_EQ(stat_of("src").st_nlink, 2);
    CHECK_OK(close(fd));
    CHECK_EQ(run_child(no_read_search), 0);
    CHECK_EQ(stat_of("src").st_nlink, 3);

    const char *names[] = {"f", "g", "n", "m", "r", "src", "l0", "l2"};
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++)
        CHECK_OK(unlink(in_dir(names[i])));
    CHECK_OK(rmdir(in_dir("sub")));
    CHECK_OK(rmdir(dir));
    puts("sgid_create: ok");
    return 0;
}
