/* Codec of the sluiced <-> sluice-mon protocol: messages, every truncation
 * and split of a packet, fds at every packet boundary, queued sends, and
 * bad packets from the peer (which end nothing but that packet). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mon_proto.h"
#include "sluice/error.h"

static const char *const samples[] = {
    "{\"type\":\"hello\",\"id\":1,\"version\":1}",
    "{\"type\":\"create\",\"id\":2,\"container_id\":\"c1\",\"bundle\":\"/b\",\"tty\":false,"
    "\"stdin\":true,\"stdin_once\":true,\"log_path\":\"/l/c1.log\"}",
    "{\"type\":\"exec\",\"id\":3,\"exec_id\":\"e\",\"container_id\":\"c1\",\"cmd\":[\"sh\",\"-c\","
    "\"echo \\\"hi\\\" \\u00e9\"],\"tty\":true,\"width\":100,\"height\":30}",
    "{\"type\":\"exited\",\"container_id\":\"c1\",\"exit_code\":7,\"finished_at\":"
    "1700000000123456789,\"reason\":\"\"}",
    "{\"type\":\"reply\",\"id\":4,\"ok\":true,\"fds\":[\"stdin\",\"stdout\",\"stderr\"]}",
};
static const size_t sample_fds[] = {0, 0, 0, 0, 3};

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static void test_decode_samples(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        json_t *m;
        assert_int_equal(sl_mon_decode(samples[i], strlen(samples[i]), sample_fds[i], &m), SL_OK);
        assert_non_null(sl_mon_str(m, "type"));
        char *out;
        size_t len;
        assert_int_equal(sl_mon_encode(m, sample_fds[i], &out, &len), SL_OK);
        json_t *again;
        assert_int_equal(sl_mon_decode(out, len, sample_fds[i], &again), SL_OK);
        assert_true(json_equal(m, again));
        free(out);
        json_decref(again);
        json_decref(m);
    }
}

/* A packet cut anywhere, or split in two packets, is never a message. */
static void test_every_split_is_rejected(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        size_t len = strlen(samples[i]);
        for (size_t cut = 0; cut < len; cut++) {
            json_t *m = (json_t *)1;
            assert_int_equal(sl_mon_decode(samples[i], cut, sample_fds[i], &m), SL_ERR_PROTO);
            assert_null(m);
            assert_int_equal(sl_mon_decode(samples[i] + cut + 1, len - cut - 1, sample_fds[i], &m),
                             SL_ERR_PROTO);
        }
    }
}

static void test_shape_rules(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "[]",
        "\"x\"",
        "{}",
        "{\"type\":1}",
        "{\"type\":null}",
        "{\"type\":\"a\",\"type\":\"b\"}",
        "{\"type\":\"a\"} {}",
        "{\"type\":\"a\",\"fds\":[\"x\"]}",
        "{\"type\":\"a\",\"fds\":\"x\"}",
        "{\"type\":\"a\\u0000\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *m;
        assert_int_equal(sl_mon_decode(bad[i], strlen(bad[i]), 0, &m), SL_ERR_PROTO);
    }
    json_t *m;
    const char *two = "{\"type\":\"a\",\"fds\":[\"x\",2]}";
    assert_int_equal(sl_mon_decode(two, strlen(two), 2, &m), SL_ERR_PROTO);
    const char *ok = "{\"type\":\"a\"}";
    assert_int_equal(sl_mon_decode(ok, strlen(ok), 1, &m), SL_ERR_PROTO); /* unnamed fd */
    assert_int_equal(sl_mon_decode(ok, SL_MON_MAX_MESSAGE + 1, 0, &m), SL_ERR_TOO_LARGE);

    json_t *msg = json_pack("{s:s}", "type", "x");
    char *out;
    size_t len;
    assert_int_equal(sl_mon_encode(msg, 1, &out, &len), SL_ERR_INVAL);
    json_object_set_new(msg, "fds", json_pack("[s]", "stdin"));
    assert_int_equal(sl_mon_encode(msg, 0, &out, &len), SL_ERR_INVAL);
    assert_int_equal(sl_mon_encode(msg, 1, &out, &len), SL_OK);
    free(out);
    char *big = calloc(1, SL_MON_MAX_MESSAGE + 1);
    memset(big, 'a', SL_MON_MAX_MESSAGE);
    json_object_set_new(msg, "big", json_string(big));
    assert_int_equal(sl_mon_encode(msg, 1, &out, &len), SL_ERR_TOO_LARGE);
    free(big);
    json_decref(msg);
    json_t *arr = json_array();
    assert_int_equal(sl_mon_encode(arr, 0, &out, &len), SL_ERR_INVAL);
    json_decref(arr);
}

/* Same file (device and inode) behind two fds. */
static void assert_same_file(int a, int b)
{
    struct stat sa, sb;
    assert_int_equal(fstat(a, &sa), 0);
    assert_int_equal(fstat(b, &sb), 0);
    assert_true(sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
}

static json_t *numbered(int i, size_t nfds, size_t pad)
{
    static const char *const names[] = {"stdin", "stdout", "stderr", "tty"};
    json_t *m = json_pack("{s:s, s:i}", "type", "reply", "id", i);
    if (nfds) {
        json_t *a = json_array();
        for (size_t k = 0; k < nfds; k++)
            json_array_append_new(a, json_string(names[k]));
        json_object_set_new(m, "fds", a);
    }
    char *p = malloc(pad + 1);
    memset(p, 'a' + i % 26, pad);
    p[pad] = '\0';
    json_object_set_new(m, "pad", json_string(p));
    free(p);
    return m;
}

static void test_fds_travel(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    sl_mon_conn tx, rx;
    sl_mon_conn_init(&tx, sv[0]);
    sl_mon_conn_init(&rx, sv[1]);
    int before = count_fds();
    for (size_t n = 0; n <= SL_MON_MAX_FDS; n++) {
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        int fds[SL_MON_MAX_FDS];
        for (size_t k = 0; k < n; k++)
            fds[k] = fcntl(k % 2 ? p[1] : p[0], F_DUPFD_CLOEXEC, 3);
        json_t *m = numbered((int)n, n, 10);
        assert_int_equal(sl_mon_conn_send(&tx, m, fds, n), SL_OK);
        json_decref(m);
        json_t *got;
        int rfds[SL_MON_MAX_FDS];
        size_t rn;
        assert_int_equal(sl_mon_conn_recv(&rx, &got, rfds, &rn), SL_OK);
        assert_int_equal(rn, n);
        assert_int_equal(json_integer_value(json_object_get(got, "id")), (json_int_t)n);
        for (size_t k = 0; k < n; k++) {
            assert_same_file(rfds[k], k % 2 ? p[1] : p[0]);
            assert_int_equal(fcntl(rfds[k], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
            close(rfds[k]);
        }
        if (n >= 2)
            assert_int_equal(sl_mon_fd_index(got, "stdout"), 1);
        json_decref(got);
        close(p[0]);
        close(p[1]);
    }
    assert_int_equal(count_fds(), before); /* the sender's copies were closed */
    sl_mon_conn_fini(&tx);
    sl_mon_conn_fini(&rx);
    close(sv[0]);
    close(sv[1]);
}

/* Fills the socket so sends queue, then reads `step` packets between
 * flushes: the queue resumes at every packet boundary, fds included. */
static void run_queue(size_t step)
{
    int sv[2];
    pair(sv);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    sl_mon_conn tx, rx;
    sl_mon_conn_init(&tx, sv[0]);
    sl_mon_conn_init(&rx, sv[1]);
    int before = count_fds();
    const int total = 60;
    for (int i = 0; i < total; i++) {
        size_t nfds = (size_t)i % (SL_MON_MAX_FDS + 1);
        int fds[SL_MON_MAX_FDS];
        for (size_t k = 0; k < nfds; k++)
            fds[k] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        json_t *m = numbered(i, nfds, 700 + (size_t)i * 13);
        assert_int_equal(sl_mon_conn_send(&tx, m, fds, nfds), SL_OK);
        json_decref(m);
    }
    assert_true(sl_mon_conn_want_write(&tx)); /* the socket refused some */
    int next = 0;
    while (next < total) {
        for (size_t k = 0; k < step && next < total; k++) {
            json_t *got;
            int rfds[SL_MON_MAX_FDS];
            size_t rn;
            int rc = sl_mon_conn_recv(&rx, &got, rfds, &rn);
            if (rc == SL_ERR_WOULDBLOCK)
                break;
            assert_int_equal(rc, SL_OK);
            assert_int_equal(json_integer_value(json_object_get(got, "id")), next);
            assert_int_equal(rn, (size_t)next % (SL_MON_MAX_FDS + 1));
            assert_int_equal(strlen(sl_mon_str(got, "pad")), 700 + (size_t)next * 13);
            for (size_t f = 0; f < rn; f++)
                close(rfds[f]);
            json_decref(got);
            next++;
        }
        int rc = sl_mon_conn_flush(&tx);
        assert_true(rc == SL_OK || rc == SL_ERR_WOULDBLOCK);
    }
    assert_false(sl_mon_conn_want_write(&tx));
    json_t *got;
    int rfds[SL_MON_MAX_FDS];
    size_t rn;
    assert_int_equal(sl_mon_conn_recv(&rx, &got, rfds, &rn), SL_ERR_WOULDBLOCK);
    assert_int_equal(count_fds(), before);
    sl_mon_conn_fini(&tx);
    sl_mon_conn_fini(&rx);
    close(sv[0]);
    close(sv[1]);
}

static void test_queue_resumes_at_every_boundary(void **state)
{
    (void)state;
    for (size_t step = 1; step <= 7; step++)
        run_queue(step);
}

static void raw_send(int fd, const void *data, size_t len, const int *fds, size_t nfds)
{
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    char ctl[CMSG_SPACE(sizeof(int) * 8)];
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds) {
        memset(ctl, 0, sizeof(ctl));
        mh.msg_control = ctl;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    assert_int_equal(sendmsg(fd, &mh, 0), (ssize_t)len);
}

static void expect_ok_after(sl_mon_conn *rx, int sender)
{
    const char *ok = "{\"type\":\"hello\",\"id\":9}";
    raw_send(sender, ok, strlen(ok), NULL, 0);
    json_t *m;
    int fds[SL_MON_MAX_FDS];
    size_t n;
    assert_int_equal(sl_mon_conn_recv(rx, &m, fds, &n), SL_OK);
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 9);
    json_decref(m);
}

static void test_bad_packets(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    int big = 4 * SL_MON_MAX_MESSAGE;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    sl_mon_conn rx;
    sl_mon_conn_init(&rx, sv[1]);
    int before = count_fds();
    json_t *m;
    int fds[SL_MON_MAX_FDS];
    size_t n;

    char *huge = malloc(SL_MON_MAX_MESSAGE + 1);
    memset(huge, ' ', SL_MON_MAX_MESSAGE + 1);
    int nul[2] = {open("/dev/null", O_RDONLY), open("/dev/null", O_RDONLY)};
    raw_send(sv[0], huge, SL_MON_MAX_MESSAGE + 1, nul, 2);
    close(nul[0]);
    close(nul[1]);
    assert_int_equal(sl_mon_conn_recv(&rx, &m, fds, &n), SL_ERR_TOO_LARGE);
    assert_int_equal(n, 0);
    free(huge);
    expect_ok_after(&rx, sv[0]);

    int many[SL_MON_MAX_FDS + 1];
    for (int i = 0; i <= SL_MON_MAX_FDS; i++)
        many[i] = open("/dev/null", O_RDONLY);
    const char *five = "{\"type\":\"x\",\"fds\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}";
    raw_send(sv[0], five, strlen(five), many, SL_MON_MAX_FDS + 1);
    for (int i = 0; i <= SL_MON_MAX_FDS; i++)
        close(many[i]);
    assert_int_equal(sl_mon_conn_recv(&rx, &m, fds, &n), SL_ERR_TOO_LARGE);
    expect_ok_after(&rx, sv[0]);

    const char *garbage = "not json";
    int one = open("/dev/null", O_RDONLY);
    raw_send(sv[0], garbage, strlen(garbage), &one, 1);
    close(one);
    assert_int_equal(sl_mon_conn_recv(&rx, &m, fds, &n), SL_ERR_PROTO);
    expect_ok_after(&rx, sv[0]);

    const char *unnamed = "{\"type\":\"x\"}";
    one = open("/dev/null", O_RDONLY);
    raw_send(sv[0], unnamed, strlen(unnamed), &one, 1);
    close(one);
    assert_int_equal(sl_mon_conn_recv(&rx, &m, fds, &n), SL_ERR_PROTO);
    expect_ok_after(&rx, sv[0]);

    assert_int_equal(count_fds(), before); /* every fd of a bad packet was closed */
    close(sv[0]);
    assert_int_equal(sl_mon_conn_recv(&rx, &m, fds, &n), SL_ERR_CLOSED);
    sl_mon_conn_fini(&rx);
    close(sv[1]);
}

static void test_peer_gone(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    sl_mon_conn tx, rx;
    sl_mon_conn_init(&tx, sv[0]);
    sl_mon_conn_init(&rx, sv[1]);
    json_t *m = numbered(1, 0, 1);
    assert_int_equal(sl_mon_conn_send(&tx, m, NULL, 0), SL_OK);
    assert_int_equal(sl_mon_conn_send(&tx, m, NULL, 0), SL_OK);
    close(sv[0]);
    json_t *got;
    int fds[SL_MON_MAX_FDS];
    size_t n;
    /* what was sent before the close still arrives, then the end */
    assert_int_equal(sl_mon_conn_recv(&rx, &got, fds, &n), SL_OK);
    json_decref(got);
    assert_int_equal(sl_mon_conn_recv(&rx, &got, fds, &n), SL_OK);
    json_decref(got);
    assert_int_equal(sl_mon_conn_recv(&rx, &got, fds, &n), SL_ERR_CLOSED);
    int before = count_fds();
    json_t *m1 = numbered(2, 1, 1);
    int fd = open("/dev/null", O_RDONLY);
    assert_int_equal(sl_mon_conn_send(&rx, m1, &fd, 1), SL_ERR_CLOSED);
    sl_mon_conn_fini(&rx); /* closes the fd still queued */
    assert_int_equal(count_fds(), before);
    json_decref(m1);
    json_decref(m);
    sl_mon_conn_fini(&tx);
    close(sv[1]);
}

static void test_queue_limit(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    sl_mon_conn tx;
    sl_mon_conn_init(&tx, sv[0]);
    json_t *m = numbered(1, 0, 200);
    int rc = SL_OK;
    size_t sent = 0;
    while ((rc = sl_mon_conn_send(&tx, m, NULL, 0)) == SL_OK)
        sent++;
    assert_int_equal(rc, SL_ERR_FULL);
    assert_int_equal(tx.queued, SL_MON_MAX_QUEUED);
    assert_true(sent >= SL_MON_MAX_QUEUED);
    int fd = open("/dev/null", O_RDONLY);
    int before = count_fds();
    json_t *m1 = numbered(2, 1, 1);
    assert_int_equal(sl_mon_conn_send(&tx, m1, &fd, 1), SL_ERR_FULL);
    assert_int_equal(count_fds(), before - 1); /* refused, and its fd closed */
    json_decref(m1);
    json_decref(m);
    sl_mon_conn_fini(&tx);
    close(sv[0]);
    close(sv[1]);
}

static void test_helpers(void **state)
{
    (void)state;
    const char *text = "{\"type\":\"stop\",\"id\":5,\"timeout\":30,\"neg\":-1,\"s\":\"x\","
                       "\"b\":true,\"fds\":[\"stdin\",\"tty\"]}";
    json_t *m;
    assert_int_equal(sl_mon_decode(text, strlen(text), 2, &m), SL_OK);
    int64_t v;
    assert_int_equal(sl_mon_int(m, "timeout", 0, 60, 0, &v), SL_OK);
    assert_int_equal(v, 30);
    assert_int_equal(sl_mon_int(m, "timeout", 0, 29, 0, &v), SL_ERR_PROTO);
    assert_int_equal(sl_mon_int(m, "neg", 0, 10, 0, &v), SL_ERR_PROTO);
    assert_int_equal(sl_mon_int(m, "s", 0, 10, 0, &v), SL_ERR_PROTO);
    assert_int_equal(sl_mon_int(m, "missing", 0, 10, 7, &v), SL_OK);
    assert_int_equal(v, 7);
    bool b;
    assert_int_equal(sl_mon_bool(m, "b", false, &b), SL_OK);
    assert_true(b);
    assert_int_equal(sl_mon_bool(m, "s", false, &b), SL_ERR_PROTO);
    assert_int_equal(sl_mon_bool(m, "missing", true, &b), SL_OK);
    assert_true(b);
    assert_string_equal(sl_mon_str(m, "s"), "x");
    assert_null(sl_mon_str(m, "timeout"));
    assert_int_equal(sl_mon_fd_index(m, "tty"), 1);
    assert_int_equal(sl_mon_fd_index(m, "stderr"), -1);
    json_t *r = sl_mon_reply(m, false, "nope");
    assert_int_equal(json_integer_value(json_object_get(r, "id")), 5);
    assert_string_equal(sl_mon_str(r, "type"), "reply");
    assert_true(json_is_false(json_object_get(r, "ok")));
    assert_string_equal(sl_mon_str(r, "error"), "nope");
    json_decref(r);
    json_decref(m);

    assert_true(sl_mon_valid_id("abc-DEF_1.2"));
    char longid[SL_MON_MAX_ID + 2];
    memset(longid, 'a', sizeof(longid));
    longid[SL_MON_MAX_ID] = '\0';
    assert_true(sl_mon_valid_id(longid));
    longid[SL_MON_MAX_ID] = 'a';
    longid[SL_MON_MAX_ID + 1] = '\0';
    assert_false(sl_mon_valid_id(longid));
    static const char *const bad[] = {"", ".", "..", ".x", "a/b", "a b", "a\n", "\xc3\xa9"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(sl_mon_valid_id(bad[i]));
    assert_false(sl_mon_valid_id(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_samples),
        cmocka_unit_test(test_every_split_is_rejected),
        cmocka_unit_test(test_shape_rules),
        cmocka_unit_test(test_fds_travel),
        cmocka_unit_test(test_queue_resumes_at_every_boundary),
        cmocka_unit_test(test_bad_packets),
        cmocka_unit_test(test_peer_gone),
        cmocka_unit_test(test_queue_limit),
        cmocka_unit_test(test_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
