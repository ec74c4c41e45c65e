/* unix_late_bind.c — binding a connected Unix socket, as Linux allows it
 * (unix_bind refuses only a socket that already has a name): a client
 * connected while unbound may bind afterwards, before or after accept,
 * even after it sent; the accepted end (which has its listener's name)
 * may not (EINVAL), nor may the client bind twice. The peer learns the
 * new name at once: recvfrom reports the sender's name as it is when the
 * bytes are read (also for bytes sent before the bind) and getpeername
 * shows it. A socketpair end may bind too. For stream and seqpacket
 * sockets, with filesystem and abstract names. */
#include "check.h"
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

static int counter;

/* A fresh name: a socket file in the scratch directory or an abstract one. */
static socklen_t fresh(struct sockaddr_un *a, int abstract) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (abstract) {
        int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "husk-late-%d-%d", getpid(), counter++);
        return offsetof(struct sockaddr_un, sun_path) + 1 + n;
    }
    snprintf(a->sun_path, sizeof a->sun_path, "%s/s%d", scratch_dir(), counter++);
    return offsetof(struct sockaddr_un, sun_path) + strlen(a->sun_path) + 1;
}

/* recvfrom's address must be `want` (`want_len` bytes). */
static void check_from(int fd, size_t want_bytes, const struct sockaddr_un *want, socklen_t want_len) {
    char buf[16];
    struct sockaddr_un from;
    socklen_t len = sizeof from;
    memset(&from, 0xee, sizeof from);
    CHECK_EQ(recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &len), want_bytes);
    CHECK_EQ(len, want_len);
    CHECK_MEM(&from, want, want_len);
}

static void check_peer(int fd, const struct sockaddr_un *want, socklen_t want_len) {
    struct sockaddr_un peer;
    socklen_t len = sizeof peer;
    CHECK_OK(getpeername(fd, (struct sockaddr *)&peer, &len));
    CHECK_EQ(len, want_len);
    CHECK_MEM(&peer, want, want_len);
}

/* The client binds after connect (before accept when `early`), having
 * sent four bytes first when `sent_before`. */
static void bind_client(int type, int abstract, int early, int sent_before) {
    struct sockaddr_un la, ca, other;
    socklen_t llen = fresh(&la, abstract), clen = fresh(&ca, abstract), olen = fresh(&other, abstract);
    int l = CHECK_OK(socket(AF_UNIX, type, 0));
    CHECK_OK(bind(l, (struct sockaddr *)&la, llen));
    CHECK_OK(listen(l, 5));
    int c = CHECK_OK(socket(AF_UNIX, type, 0));
    CHECK_OK(connect(c, (struct sockaddr *)&la, llen));
    int s = -1;
    if (!early)
        s = CHECK_OK(accept(l, NULL, NULL));
    int one = 1;
    if (sent_before)
        CHECK_EQ(send(c, &one, sizeof one, 0), sizeof one);
    CHECK_OK(bind(c, (struct sockaddr *)&ca, clen));
    CHECK_ERR(bind(c, (struct sockaddr *)&other, olen), EINVAL);
    if (early)
        s = CHECK_OK(accept(l, NULL, NULL));
    /* The accepted end is named after its listener. */
    CHECK_ERR(bind(s, (struct sockaddr *)&other, olen), EINVAL);
    check_peer(s, &ca, clen);
    CHECK_EQ(send(c, &one, sizeof one, 0), sizeof one);
    if (sent_before && type == SOCK_STREAM) {
        /* The stream's bytes coalesce; the name is the current one. */
        check_from(s, 2 * sizeof one, &ca, clen);
    } else {
        if (sent_before)
            check_from(s, sizeof one, &ca, clen);
        check_from(s, sizeof one, &ca, clen);
    }
    close(s);
    close(c);
    close(l);
}

/* Bytes from a client that never bound come with no name at all. */
static void unbound_client(int type) {
    struct sockaddr_un la;
    socklen_t llen = fresh(&la, 1);
    int l = CHECK_OK(socket(AF_UNIX, type, 0));
    CHECK_OK(bind(l, (struct sockaddr *)&la, llen));
    CHECK_OK(listen(l, 5));
    int c = CHECK_OK(socket(AF_UNIX, type, 0));
    CHECK_OK(connect(c, (struct sockaddr *)&la, llen));
    int s = CHECK_OK(accept(l, NULL, NULL));
    CHECK_EQ(send(c, "x", 1, 0), 1);
    char buf[4];
    struct sockaddr_un from;
    socklen_t len = sizeof from;
    CHECK_EQ(recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &len), 1);
    CHECK_EQ(len, 0);
    close(s);
    close(c);
    close(l);
}

/* A socketpair end binds; the other end's getpeername shows it. */
static void pair_binds(int type) {
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, type, 0, sv));
    struct sockaddr_un a, other;
    socklen_t alen = fresh(&a, 1), olen = fresh(&other, 1);
    CHECK_OK(bind(sv[0], (struct sockaddr *)&a, alen));
    CHECK_ERR(bind(sv[0], (struct sockaddr *)&other, olen), EINVAL);
    check_peer(sv[1], &a, alen);
    CHECK_EQ(send(sv[0], "y", 1, 0), 1);
    check_from(sv[1], 1, &a, alen);
    close(sv[0]);
    close(sv[1]);
}

int main(void) {
    static const int types[] = {SOCK_STREAM, SOCK_SEQPACKET};
    for (int t = 0; t < 2; t++) {
        for (int abstract = 0; abstract < 2; abstract++) {
            bind_client(types[t], abstract, 1, 0);
            bind_client(types[t], abstract, 0, 0);
            bind_client(types[t], abstract, 0, 1);
        }
        unbound_client(types[t]);
        pair_binds(types[t]);
    }
    return 0;
}
