/* inotify.c — inotify (man 7 inotify): argument errors, the events of
 * create/open/write/read/close/chmod/rename/mkdir/rmdir/unlink and their
 * order, IN_DELETE_SELF of a file or directory removed while open (or the
 * working directory) at its last release, one wd per inode (hard links, IN_DONT_FOLLOW), IN_MASK_ADD and
 * IN_MASK_CREATE, IN_ONESHOT, IN_EXCL_UNLINK, rm_watch's IN_IGNORED,
 * merging of identical consecutive events, the record layout and EINVAL
 * for a short buffer, FIONREAD, IN_NONBLOCK, a blocking read woken by
 * another process, poll/epoll readiness and the queue overflow at
 * /proc/sys/fs/inotify/max_queued_events. In /tmp, or in the directory
 * argv[1] names (under husk: /var/tmp is on the root overlay). */
#include "check.h"
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>

struct ev {
    int wd;
    unsigned mask;
    unsigned cookie;
    char name[64];
};

static struct ev evs[64];

/* Reads every queued event of non-blocking `fd` into evs; returns the count. */
static int drain(int fd) {
    char buf[4096] __attribute__((aligned(8)));
    int n = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0) {
            CHECK_EQ(errno, EAGAIN);
            return n;
        }
        for (ssize_t off = 0; off < r;) {
            struct inotify_event *e = (struct inotify_event *)(buf + off);
            CHECK(n < 64);
            evs[n].wd = e->wd;
            evs[n].mask = e->mask;
            evs[n].cookie = e->cookie;
            CHECK(e->len < sizeof evs[n].name);
            CHECK_EQ(e->len % sizeof(struct inotify_event), 0);
            snprintf(evs[n].name, sizeof evs[n].name, "%s", e->len ? e->name : "");
            n++;
            off += sizeof(struct inotify_event) + e->len;
        }
    }
}

#define EXPECT(i, w, m, nm)                                                   \
    do {                                                                      \
        CHECK_EQ(evs[i].wd, (w));                                             \
        CHECK_EQ(evs[i].mask, (m));                                           \
        CHECK_STR(evs[i].name, (nm));                                         \
    } while (0)

static char paths[4][256], path2[256];

/* dir/name, in one of four buffers used in turn (two may be live at once). */
static const char *at(const char *dir, const char *name) {
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}

static char base[128];

static int rm_cb(const char *p, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)type, (void)ftw;
    return remove(p);
}

static void cleanup(void) {
    nftw(base, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* argv[1]: the directory to work in (default: a scratch directory in /tmp). */
int main(int argc, char **argv) {
    const char *dir = scratch_dir();
    if (argc > 1) {
        snprintf(base, sizeof base, "%s/husk-inotify-XXXXXX", argv[1]);
        CHECK(mkdtemp(base) != NULL);
        atexit(cleanup);
        dir = base;
    }
    char d[200];
    snprintf(d, sizeof d, "%s/w", dir);
    CHECK_OK(mkdir(d, 0755));

    /* Argument errors. */
    CHECK_ERR(inotify_init1(IN_NONBLOCK << 1), EINVAL);
    int fd = CHECK_OK(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
    CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
    CHECK_ERR(inotify_add_watch(fd, d, 0), EINVAL);
    CHECK_ERR(inotify_add_watch(fd, d, IN_CREATE | IN_MASK_ADD | IN_MASK_CREATE), EINVAL);
    CHECK_ERR(inotify_add_watch(999, d, IN_CREATE), EBADF);
    int notino = CHECK_OK(open(d, O_RDONLY | O_DIRECTORY));
    CHECK_ERR(inotify_add_watch(notino, d, IN_CREATE), EINVAL);
    CHECK_ERR(inotify_rm_watch(notino, 1), EINVAL);
    CHECK_OK(close(notino));
    CHECK_ERR(inotify_add_watch(fd, at(d, "missing"), IN_CREATE), ENOENT);
    CHECK_ERR(inotify_rm_watch(fd, 12345), EINVAL);
    char small[64];
    CHECK_ERR(read(fd, small, sizeof small), EAGAIN);

    /* create, write, close: the directory's watch sees them with the name. */
    int dwd = CHECK_OK(inotify_add_watch(fd, d, IN_ALL_EVENTS));
    CHECK(dwd >= 1);
    int f = CHECK_OK(open(at(d, "f"), O_CREAT | O_WRONLY, 0644));
    CHECK_EQ(write(f, "hi", 2), 2);
    CHECK_EQ(write(f, "ho", 2), 2);
    CHECK_OK(close(f));
    CHECK_EQ(drain(fd), 4);
    EXPECT(0, dwd, IN_CREATE, "f");
    EXPECT(1, dwd, IN_OPEN, "f");
    EXPECT(2, dwd, IN_MODIFY, "f"); /* the second write merged into it */
    EXPECT(3, dwd, IN_CLOSE_WRITE, "f");
    CHECK_ERR(inotify_add_watch(fd, at(d, "f"), IN_ONLYDIR | IN_ATTRIB), ENOTDIR);

    /* One wd per inode: the same path, a hard link. */
    int fwd = CHECK_OK(inotify_add_watch(fd, at(d, "f"), IN_ALL_EVENTS));
    CHECK(fwd != dwd);
    CHECK_EQ(inotify_add_watch(fd, at(d, "f"), IN_ALL_EVENTS), fwd);
    CHECK_ERR(inotify_add_watch(fd, at(d, "f"), IN_ALL_EVENTS | IN_MASK_CREATE), EEXIST);
    snprintf(path2, sizeof path2, "%s/hard", dir);
    CHECK_OK(link(at(d, "f"), path2));
    CHECK_EQ(inotify_add_watch(fd, path2, IN_ATTRIB), fwd);
    /* That replaced the mask with IN_ATTRIB; IN_MASK_ADD extends it again. */
    CHECK_EQ(inotify_add_watch(fd, path2, IN_ALL_EVENTS | IN_MASK_ADD), fwd);
    CHECK_EQ(drain(fd), 1);
    EXPECT(0, fwd, IN_ATTRIB, ""); /* link(2) changed the link count */
    CHECK_OK(unlink(path2));
    CHECK_EQ(drain(fd), 1);
    EXPECT(0, fwd, IN_ATTRIB, "");

    /* A symlink: followed unless IN_DONT_FOLLOW. */
    CHECK_OK(symlink("f", at(d, "l")));
    CHECK_EQ(inotify_add_watch(fd, at(d, "l"), IN_ATTRIB | IN_MASK_ADD), fwd);
    int lwd = CHECK_OK(inotify_add_watch(fd, at(d, "l"), IN_ATTRIB | IN_DONT_FOLLOW));
    CHECK(lwd != fwd && lwd != dwd);
    CHECK_OK(inotify_rm_watch(fd, lwd));
    CHECK_OK(unlink(at(d, "l")));
    CHECK_EQ(drain(fd), 3);
    EXPECT(0, dwd, IN_CREATE, "l");
    EXPECT(1, lwd, IN_IGNORED, "");
    EXPECT(2, dwd, IN_DELETE, "l");

    /* read: the directory's event first, then the file's own. */
    f = CHECK_OK(open(at(d, "f"), O_RDONLY));
    char b[8];
    CHECK_EQ(read(f, b, sizeof b), 4);
    CHECK_EQ(read(f, b, sizeof b), 0); /* nothing read: no event */
    CHECK_OK(close(f));
    CHECK_EQ(drain(fd), 6);
    EXPECT(0, dwd, IN_OPEN, "f");
    EXPECT(1, fwd, IN_OPEN, "");
    EXPECT(2, dwd, IN_ACCESS, "f");
    EXPECT(3, fwd, IN_ACCESS, "");
    EXPECT(4, dwd, IN_CLOSE_NOWRITE, "f");
    EXPECT(5, fwd, IN_CLOSE_NOWRITE, "");

    /* chmod and truncation through a descriptor. */
    CHECK_OK(chmod(at(d, "f"), 0600));
    f = CHECK_OK(open(at(d, "f"), O_WRONLY | O_TRUNC));
    CHECK_OK(ftruncate(f, 10));
    CHECK_OK(close(f));
    CHECK_EQ(drain(fd), 10);
    EXPECT(0, dwd, IN_ATTRIB, "f");
    EXPECT(1, fwd, IN_ATTRIB, "");
    EXPECT(2, dwd, IN_OPEN, "f");
    EXPECT(3, fwd, IN_OPEN, "");
    EXPECT(4, dwd, IN_MODIFY, "f"); /* O_TRUNC */
    EXPECT(5, fwd, IN_MODIFY, "");
    EXPECT(6, dwd, IN_MODIFY, "f"); /* ftruncate: not merged, the last */
    EXPECT(7, fwd, IN_MODIFY, "");  /* queued event was the file's own */
    EXPECT(8, dwd, IN_CLOSE_WRITE, "f");
    EXPECT(9, fwd, IN_CLOSE_WRITE, "");

    /* FIONREAD and the record layout: a name is NUL-padded to 16 bytes. */
    CHECK_OK(rename(at(d, "f"), at(d, "g")));
    int avail = -1;
    CHECK_OK(ioctl(fd, FIONREAD, &avail));
    CHECK_EQ(avail, 32 + 32 + 16);
    char tiny[sizeof(struct inotify_event)];
    CHECK_ERR(read(fd, tiny, sizeof tiny), EINVAL);
    CHECK_EQ(drain(fd), 3);
    EXPECT(0, dwd, IN_MOVED_FROM, "f");
    EXPECT(1, dwd, IN_MOVED_TO, "g");
    EXPECT(2, fwd, IN_MOVE_SELF, "");
    CHECK(evs[0].cookie != 0);
    CHECK_EQ(evs[0].cookie, evs[1].cookie);
    CHECK_EQ(evs[2].cookie, 0);

    /* mkdir and rmdir. */
    CHECK_OK(mkdir(at(d, "s"), 0755));
    int swd = CHECK_OK(inotify_add_watch(fd, at(d, "s"), IN_DELETE_SELF));
    CHECK_OK(rmdir(at(d, "s")));
    CHECK_EQ(drain(fd), 4);
    EXPECT(0, dwd, IN_CREATE | IN_ISDIR, "s");
    EXPECT(1, swd, IN_DELETE_SELF, "");
    EXPECT(2, swd, IN_IGNORED, "");
    EXPECT(3, dwd, IN_DELETE | IN_ISDIR, "s");

    /* unlink of a watched file: its link count, its end, then the name. */
    CHECK_OK(unlink(at(d, "g")));
    CHECK_EQ(drain(fd), 4);
    EXPECT(0, fwd, IN_ATTRIB, "");
    EXPECT(1, fwd, IN_DELETE_SELF, "");
    EXPECT(2, fwd, IN_IGNORED, "");
    EXPECT(3, dwd, IN_DELETE, "g");
    CHECK_ERR(inotify_rm_watch(fd, fwd), EINVAL);

    /* Removed while something holds it: the link count and the name go
     * now, the inode (IN_DELETE_SELF, then IN_IGNORED) when the last
     * holder lets go. An open file, closed through a dup last. */
    int o = CHECK_OK(open(at(d, "open"), O_CREAT | O_RDWR, 0644));
    int o2 = CHECK_OK(dup(o));
    int owd = CHECK_OK(inotify_add_watch(fd, at(d, "open"), IN_ATTRIB | IN_DELETE_SELF));
    CHECK_OK(unlink(at(d, "open")));
    CHECK_OK(close(o));
    CHECK_EQ(drain(fd), 4);
    EXPECT(0, dwd, IN_CREATE, "open");
    EXPECT(1, dwd, IN_OPEN, "open");
    EXPECT(2, owd, IN_ATTRIB, "");
    EXPECT(3, dwd, IN_DELETE, "open");
    CHECK_OK(close(o2));
    CHECK_EQ(drain(fd), 3);
    EXPECT(0, dwd, IN_CLOSE_WRITE, "open");
    EXPECT(1, owd, IN_DELETE_SELF, "");
    EXPECT(2, owd, IN_IGNORED, "");
    CHECK_ERR(inotify_rm_watch(fd, owd), EINVAL);
    /* A directory open, then one that is the working directory. */
    CHECK_OK(mkdir(at(d, "held"), 0755));
    int hwd = CHECK_OK(inotify_add_watch(fd, at(d, "held"), IN_DELETE_SELF));
    int h = CHECK_OK(open(at(d, "held"), O_RDONLY | O_DIRECTORY));
    CHECK_OK(rmdir(at(d, "held")));
    CHECK_EQ(drain(fd), 3);
    EXPECT(0, dwd, IN_CREATE | IN_ISDIR, "held");
    EXPECT(1, dwd, IN_OPEN | IN_ISDIR, "held");
    EXPECT(2, dwd, IN_DELETE | IN_ISDIR, "held");
    CHECK_OK(close(h));
    CHECK_EQ(drain(fd), 3);
    EXPECT(0, dwd, IN_CLOSE_NOWRITE | IN_ISDIR, "held");
    EXPECT(1, hwd, IN_DELETE_SELF, "");
    EXPECT(2, hwd, IN_IGNORED, "");
    int here = CHECK_OK(open(".", O_RDONLY | O_DIRECTORY));
    CHECK_OK(mkdir(at(d, "cwd"), 0755));
    int cwd = CHECK_OK(inotify_add_watch(fd, at(d, "cwd"), IN_DELETE_SELF));
    CHECK_OK(chdir(at(d, "cwd")));
    CHECK_OK(rmdir(at(d, "cwd")));
    CHECK_EQ(drain(fd), 2);
    EXPECT(0, dwd, IN_CREATE | IN_ISDIR, "cwd");
    EXPECT(1, dwd, IN_DELETE | IN_ISDIR, "cwd");
    CHECK_OK(fchdir(here));
    CHECK_OK(close(here));
    CHECK_EQ(drain(fd), 2);
    EXPECT(0, cwd, IN_DELETE_SELF, "");
    EXPECT(1, cwd, IN_IGNORED, "");
    /* A file replaced by a rename while open. */
    int t = CHECK_OK(open(at(d, "target"), O_CREAT | O_RDWR, 0644));
    CHECK_OK(close(CHECK_OK(open(at(d, "src"), O_CREAT | O_RDONLY, 0644))));
    int twd = CHECK_OK(inotify_add_watch(fd, at(d, "target"), IN_ATTRIB | IN_DELETE_SELF));
    CHECK_EQ(drain(fd), 5);
    CHECK_OK(rename(at(d, "src"), at(d, "target")));
    CHECK_EQ(drain(fd), 3);
    EXPECT(0, dwd, IN_MOVED_FROM, "src");
    EXPECT(1, dwd, IN_MOVED_TO, "target");
    EXPECT(2, twd, IN_ATTRIB, "");
    CHECK_OK(close(t));
    CHECK_EQ(drain(fd), 3);
    EXPECT(0, dwd, IN_CLOSE_WRITE, "target");
    EXPECT(1, twd, IN_DELETE_SELF, "");
    EXPECT(2, twd, IN_IGNORED, "");
    CHECK_OK(unlink(at(d, "target")));
    CHECK_EQ(drain(fd), 1);
    EXPECT(0, dwd, IN_DELETE, "target");

    /* Listing the directory: its own open, access (each getdents, the
     * identical ones merged) and close, flagged IN_ISDIR. */
    DIR *dp = opendir(d);
    CHECK(dp != NULL);
    while (readdir(dp) != NULL)
        ;
    CHECK_OK(closedir(dp));
    CHECK_EQ(drain(fd), 3);
    EXPECT(0, dwd, IN_OPEN | IN_ISDIR, "");
    EXPECT(1, dwd, IN_ACCESS | IN_ISDIR, "");
    EXPECT(2, dwd, IN_CLOSE_NOWRITE | IN_ISDIR, "");

    /* Binding a Unix socket makes its name (IN_CREATE). */
    int us = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", at(d, "sock"));
    CHECK_OK(bind(us, (struct sockaddr *)&sa, sizeof sa));
    CHECK_OK(close(us));
    CHECK_OK(unlink(at(d, "sock")));
    CHECK_EQ(drain(fd), 2);
    EXPECT(0, dwd, IN_CREATE, "sock");
    EXPECT(1, dwd, IN_DELETE, "sock");

    /* rm_watch reports IN_IGNORED; a new watch gets a new wd. */
    CHECK_OK(inotify_rm_watch(fd, dwd));
    CHECK_EQ(drain(fd), 1);
    EXPECT(0, dwd, IN_IGNORED, "");
    int dwd2 = CHECK_OK(inotify_add_watch(fd, d, IN_CREATE | IN_ONESHOT));
    CHECK(dwd2 > dwd);

    /* IN_ONESHOT: one event, then the watch is gone. */
    CHECK_OK(close(CHECK_OK(creat(at(d, "a"), 0644))));
    CHECK_OK(close(CHECK_OK(creat(at(d, "b"), 0644))));
    CHECK_EQ(drain(fd), 2);
    EXPECT(0, dwd2, IN_CREATE, "a");
    EXPECT(1, dwd2, IN_IGNORED, "");
    CHECK_ERR(inotify_rm_watch(fd, dwd2), EINVAL);

    /* IN_EXCL_UNLINK: no events for a child once it is unlinked. */
    int xwd = CHECK_OK(inotify_add_watch(fd, d, IN_MODIFY | IN_EXCL_UNLINK));
    f = CHECK_OK(open(at(d, "a"), O_WRONLY));
    CHECK_OK(unlink(at(d, "a")));
    CHECK_EQ(write(f, "x", 1), 1);
    CHECK_EQ(drain(fd), 0);
    CHECK_EQ(inotify_add_watch(fd, d, IN_MODIFY), xwd);
    CHECK_EQ(write(f, "x", 1), 1);
    CHECK_EQ(drain(fd), 1);
    EXPECT(0, xwd, IN_MODIFY, "a");
    CHECK_OK(close(f));

    /* poll and epoll readiness. */
    int ep = CHECK_OK(epoll_create1(0));
    struct epoll_event ee = {.events = EPOLLIN, .data.u32 = 7};
    CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee));
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    CHECK_EQ(poll(&pfd, 1, 0), 0);
    CHECK_EQ(epoll_wait(ep, &ee, 1, 0), 0);
    CHECK_OK(inotify_add_watch(fd, d, IN_CREATE));
    CHECK_OK(close(CHECK_OK(creat(at(d, "c"), 0644))));
    CHECK_EQ(poll(&pfd, 1, 0), 1);
    CHECK_EQ(pfd.revents, POLLIN);
    CHECK_EQ(epoll_wait(ep, &ee, 1, 1000), 1);
    CHECK_EQ(ee.events, EPOLLIN);
    CHECK_EQ(ee.data.u32, 7);
    CHECK_EQ(drain(fd), 1);
    EXPECT(0, xwd, IN_CREATE, "c");
    CHECK_OK(close(ep));

    /* A blocking read waits for another process's change. */
    int bfd = CHECK_OK(inotify_init());
    int bwd = CHECK_OK(inotify_add_watch(bfd, d, IN_DELETE));
    pid_t pid = CHECK_OK(fork());
    if (pid == 0) {
        usleep(100 * 1000);
        _exit(unlink(at(d, "c")) == 0 ? 0 : 1);
    }
    char big[256] __attribute__((aligned(8)));
    ssize_t r = read(bfd, big, sizeof big);
    CHECK_EQ(r, 32);
    struct inotify_event *e = (struct inotify_event *)big;
    CHECK_EQ(e->wd, bwd);
    CHECK_EQ(e->mask, IN_DELETE);
    CHECK_STR(e->name, "c");
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK_EQ(st, 0);
    CHECK_OK(close(bfd));

    /* Overflow: max_queued_events events, then one IN_Q_OVERFLOW. */
    FILE *mq = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
    CHECK(mq != NULL);
    long max = 0;
    CHECK_EQ(fscanf(mq, "%ld", &max), 1);
    fclose(mq);
    CHECK(max > 0);
    if (max <= 65536) {
        int ofd = CHECK_OK(inotify_init1(IN_NONBLOCK));
        int owd = CHECK_OK(inotify_add_watch(ofd, at(d, "b"), IN_OPEN | IN_CLOSE_NOWRITE));
        for (long i = 0; i < max / 2 + 2; i++)
            CHECK_OK(close(CHECK_OK(open(at(d, "b"), O_RDONLY))));
        CHECK_OK(ioctl(ofd, FIONREAD, &avail));
        CHECK_EQ(avail, (max + 1) * 16);
        long seen = 0, overflow = 0;
        char obuf[4096] __attribute__((aligned(8)));
        for (;;) {
            ssize_t n = read(ofd, obuf, sizeof obuf);
            if (n < 0) {
                CHECK_EQ(errno, EAGAIN);
                break;
            }
            for (ssize_t off = 0; off < n; off += sizeof(struct inotify_event)) {
                struct inotify_event *oe = (struct inotify_event *)(obuf + off);
                if (oe->mask == IN_Q_OVERFLOW) {
                    CHECK_EQ(oe->wd, -1);
                    overflow++;
                } else {
                    CHECK_EQ(oe->wd, owd);
                    CHECK_EQ(oe->mask, seen % 2 ? IN_CLOSE_NOWRITE : IN_OPEN);
                    seen++;
                }
            }
        }
        CHECK_EQ(seen, max);
        CHECK_EQ(overflow, 1);
        CHECK_OK(close(ofd));
    }
    CHECK_OK(close(fd));
    return 0;
}
