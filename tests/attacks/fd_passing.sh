# fd_passing.sh: descriptors passed over a unix socket (SCM_RIGHTS) stay
# inside the sandbox's root: a guest in `--rootfs DIR` passes a directory
# descriptor of its root to another process, which then walks `..` from it
# and opens the secret beside DIR by name. It finds only sandbox files, and
# a passed descriptor of a file still reads what the sender opened.
. "$ATTACK_SRC/lib.sh"
plant_secret
root="$ATTACK_TMP/rootfs"
mkdir -p "$root/bin" "$root/tmp"
echo inside >"$root/inside"
cat >"$ATTACK_TMP/pass.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
static void sendfd(int s, int fd) {
    char c = 'x', cb[CMSG_SPACE(sizeof(int))];
    struct iovec io = {&c, 1};
    struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof cb};
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET; h->cmsg_type = SCM_RIGHTS; h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
    if (sendmsg(s, &m, 0) != 1) _exit(9);
}
static int recvfd(int s) {
    char c, cb[CMSG_SPACE(sizeof(int))];
    struct iovec io = {&c, 1};
    struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof cb};
    if (recvmsg(s, &m, 0) != 1) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fd);
    return fd;
}
int main(int argc, char **argv) {
    (void)argc;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return 2;
    if (fork() == 0) {
        sendfd(sv[0], open("/", O_RDONLY | O_DIRECTORY));
        sendfd(sv[0], open("/inside", O_RDONLY));
        _exit(0);
    }
    int dir = recvfd(sv[1]), file = recvfd(sv[1]);
    if (dir < 0 || file < 0) { puts("no fds"); return 3; }
    char p[512], b[256];
    const char *up[] = {"..", "../..", "../../..", "../../../.."};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", up[i], argv[1]);
        int fd = openat(dir, p, O_RDONLY);
        if (fd >= 0) { ssize_t n = read(fd, b, sizeof b - 1); b[n > 0 ? n : 0] = 0; printf("READ %s: %s\n", p, b); }
    }
    int in = openat(dir, "../inside", O_RDONLY);
    ssize_t n = in >= 0 ? read(in, b, sizeof b - 1) : -1;
    if (n != 7 || memcmp(b, "inside\n", 7)) { puts("../inside from the passed root is not the sandbox's"); return 4; }
    n = read(file, b, sizeof b - 1);
    if (n != 7 || memcmp(b, "inside\n", 7)) { puts("the passed file does not read /inside"); return 5; }
    wait(0);
    puts("pass: done");
    return 0;
}
C
cc -static -O1 -Wall -o "$root/bin/pass" "$ATTACK_TMP/pass.c" || fail "cc"
out=$(cd / && timeout -s KILL 20 "$HUSK" do --rootfs "$root" -- /bin/pass "$name" 2>&1); rc=$?
echo "$out" | grep -q "$secret" && fail "SANDBOX ESCAPE through a passed descriptor: $out"
echo "$out" | grep READ && fail "a passed descriptor reached outside the root: $out"
[ "$rc" = 0 ] && echo "$out" | grep -q 'pass: done' || fail "rc $rc: $out"
exit 0
