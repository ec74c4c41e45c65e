/* caps.c — capabilities, not the uid, decide: capget/capset, a root
 * process without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH cannot open a
 * mode-0 file, setuid away from root drops the sets (PR_SET_KEEPCAPS keeps
 * the permitted one), exec as non-root keeps only the ambient set,
 * PR_CAP_AMBIENT, and the bounding set (PR_CAPBSET_READ/DROP) limiting
 * what root gets at exec. Run as root. */
#include "check.h"
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static struct __user_cap_data_struct caps[2];

static void get_caps(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    CHECK_OK(syscall(SYS_capget, &h, caps));
}

static int set_caps(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    return (int)syscall(SYS_capset, &h, caps);
}

static int has(int word_set, int cap) {
    unsigned w = word_set == 0 ? caps[cap / 32].effective : word_set == 1 ? caps[cap / 32].permitted
                                                                          : caps[cap / 32].inheritable;
    return (w >> (cap % 32)) & 1;
}

static void clear(int cap) { caps[cap / 32].effective &= ~(1u << (cap % 32)); }

static int run_child(int (*body)(void)) {
    pid_t c = CHECK_OK(fork());
    if (c == 0)
        _exit(body());
    int st;
    CHECK_EQ(waitpid(c, &st, 0), c);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static const char *secret = "/tmp/caps-secret";
static const char *self;

static int without_dac(void) {
    get_caps();
    clear(CAP_DAC_OVERRIDE);
    clear(CAP_DAC_READ_SEARCH);
    CHECK_OK(set_caps());
    CHECK_ERR(open(secret, O_RDONLY), EACCES);
    get_caps();
    CHECK(!has(0, CAP_DAC_OVERRIDE) && has(1, CAP_DAC_OVERRIDE));
    /* Still permitted: raising the effective bit again works. */
    caps[0].effective = caps[0].permitted;
    caps[1].effective = caps[1].permitted;
    CHECK_OK(set_caps());
    CHECK_OK(close(CHECK_OK(open(secret, O_RDONLY))));
    /* Without CAP_CHOWN, root cannot give the file away. */
    get_caps();
    clear(CAP_CHOWN);
    CHECK_OK(set_caps());
    CHECK_ERR(chown(secret, 1000, -1), EPERM);
    /* A capability not permitted cannot be raised. */
    caps[0].permitted &= ~(1u << CAP_KILL);
    caps[0].effective &= ~(1u << CAP_KILL);
    CHECK_OK(set_caps());
    caps[0].permitted |= 1u << CAP_KILL;
    CHECK_ERR(set_caps(), EPERM);
    return 0;
}

static int setuid_drops(void) {
    CHECK_OK(setuid(1000));
    get_caps();
    CHECK_EQ(caps[0].effective | caps[0].permitted | caps[1].effective | caps[1].permitted, 0);
    CHECK_ERR(setuid(0), EPERM);
    CHECK_ERR(open(secret, O_RDONLY), EACCES);
    return 0;
}

static int keepcaps_then_exec(void) {
    CHECK_OK(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
    CHECK_OK(setresuid(1000, 1000, 1000));
    get_caps();
    CHECK(!has(0, CAP_DAC_OVERRIDE));
    CHECK(has(1, CAP_DAC_OVERRIDE));
    caps[0].effective = caps[0].permitted;
    caps[1].effective = caps[1].permitted;
    /* Keep one capability ambient across exec. */
    caps[0].inheritable = 1u << CAP_NET_BIND_SERVICE;
    CHECK_OK(set_caps());
    CHECK_OK(close(CHECK_OK(open(secret, O_RDONLY)))); /* uid 1000, yet */
    CHECK_ERR(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_CHOWN, 0, 0), EPERM);
    CHECK_OK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0));
    CHECK_EQ(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0), 1);
    execl(self, self, "after-exec", (char *)NULL);
    return 99;
}

/* In the program a non-root process executed: only the ambient set. */
static int after_exec(void) {
    get_caps();
    CHECK(has(0, CAP_NET_BIND_SERVICE));
    CHECK(!has(0, CAP_DAC_OVERRIDE) && !has(1, CAP_DAC_OVERRIDE));
    CHECK_ERR(open(secret, O_RDONLY), EACCES);
    int s = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(999);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_OK(bind(s, (struct sockaddr *)&a, sizeof a)); /* a privileged port */
    close(s);
    return 0;
}

static int bounding_set(void) {
    CHECK_EQ(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0), 1);
    CHECK_ERR(prctl(PR_CAPBSET_READ, 99, 0, 0, 0), EINVAL);
    CHECK_OK(prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0));
    CHECK_EQ(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0), 0);
    execl(self, self, "root-after-drop", (char *)NULL);
    return 99;
}

/* Root after exec gets its bounding set: no CAP_SYS_ADMIN any more. */
static int root_after_drop(void) {
    get_caps();
    CHECK(!has(0, CAP_SYS_ADMIN) && !has(1, CAP_SYS_ADMIN));
    CHECK(has(0, CAP_CHOWN));
    CHECK_ERR(sethostname("nope", 4), EPERM);
    /* Without CAP_SETPCAP the bounding set cannot shrink further. */
    get_caps();
    clear(CAP_SETPCAP);
    CHECK_OK(set_caps());
    CHECK_ERR(prctl(PR_CAPBSET_DROP, CAP_CHOWN, 0, 0, 0), EPERM);
    return 0;
}

int main(int argc, char **argv) {
    self = argv[0];
    if (argc > 1 && strcmp(argv[1], "after-exec") == 0)
        return after_exec();
    if (argc > 1 && strcmp(argv[1], "root-after-drop") == 0)
        return root_after_drop();
    if (geteuid() != 0) {
        printf("caps: skipped, needs root\n");
        return 0;
    }
    get_caps();
    CHECK(has(0, CAP_SYS_ADMIN) && has(1, CAP_SYS_ADMIN));
    int fd = CHECK_OK(open(secret, O_CREAT | O_WRONLY | O_TRUNC, 0));
    close(fd);
    CHECK_OK(chmod(secret, 0));
    CHECK_EQ(run_child(without_dac), 0);
    CHECK_EQ(run_child(setuid_drops), 0);
    CHECK_EQ(run_child(keepcaps_then_exec), 0);
    CHECK_EQ(run_child(bounding_set), 0);
    unlink(secret);
    printf("caps: ok\n");
    return 0;
}
