/* The bufq -> stream write loop: one uv_write in flight, and a few bytes
 * queued behind a write that already left go out at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/uvout.h"
#include "sluice/error.h"

typedef struct fx {
    uv_loop_t loop;
    uv_pipe_t pipe;
    int peer; /* the other end, read without the loop */
    sl_uvout w;
    sl_bufq q;
    size_t done; /* bytes the write callback completed */
    int callbacks;
} fx;

static void write_cb(uv_write_t *req, int status)
{
    fx *f = req->data;
    assert_int_equal(status, 0);
    f->done += sl_uvout_done(&f->w, &f->q, status);
    f->callbacks++;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(uv_pipe_init(&f->loop, &f->pipe, 0), 0);
    assert_int_equal(uv_pipe_open(&f->pipe, sv[0]), 0);
    f->peer = sv[1];
    f->w.req.data = f;
    sl_bufq_init(&f->q);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    uv_close((uv_handle_t *)&f->pipe, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    close(f->peer);
    sl_bufq_fini(&f->q);
    free(f);
    return 0;
}

/* What the peer can read now, without running the loop. */
static size_t peer_has(fx *f, uint8_t *buf, size_t len)
{
    ssize_t n = recv(f->peer, buf, len, MSG_DONTWAIT);
    return n > 0 ? (size_t)n : 0;
}

static void flush(fx *f)
{
    assert_int_equal(sl_uvout_flush(&f->w, (uv_stream_t *)&f->pipe, &f->q, write_cb), 1);
}

/* A status, then its FIN and the GOAWAY queued in the same round: all of
 * them reach the peer before the loop runs the first write's callback,
 * which then completes them all. */
static void small_bytes_follow_at_once(void **state)
{
    fx *f = *state;
    uint8_t buf[256];
    assert_int_equal(sl_bufq_append(&f->q, "status", 6), SL_OK);
    flush(f);
    assert_int_equal(sl_bufq_append(&f->q, "fin", 3), SL_OK);
    flush(f);
    assert_int_equal(sl_bufq_append(&f->q, "goaway", 6), SL_OK);
    flush(f);
    assert_int_equal(f->callbacks, 0);
    assert_int_equal(peer_has(f, buf, sizeof(buf)), 15);
    assert_memory_equal(buf, "statusfingoaway", 15);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(f->callbacks, 1);
    assert_int_equal(f->done, 15);
    assert_int_equal(sl_bufq_len(&f->q), 0);
    assert_int_equal(sl_uvout_flush(&f->w, (uv_stream_t *)&f->pipe, &f->q, write_cb), 0);
}

/* Bulk data behind a write in flight waits for its callback: one write
 * per round, nothing lost or reordered. */
static void bulk_waits_for_the_callback(void **state)
{
    fx *f = *state;
    static uint8_t big[SL_UVOUT_NOW_MAX + 1], got[2 * sizeof(big)];
    memset(big, 'b', sizeof(big));
    assert_int_equal(sl_bufq_append(&f->q, "head", 4), SL_OK);
    flush(f);
    assert_int_equal(sl_bufq_append(&f->q, big, sizeof(big)), SL_OK);
    flush(f);
    assert_int_equal(peer_has(f, got, sizeof(got)), 4);
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(f->done, 4);
    assert_int_equal(sl_bufq_len(&f->q), sizeof(big));
    flush(f); /* the next write: the bulk, whole */
    assert_int_equal(peer_has(f, got, sizeof(got)), sizeof(big));
    assert_memory_equal(got, big, sizeof(big));
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(f->done, 4 + sizeof(big));
    assert_int_equal(sl_bufq_len(&f->q), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(small_bytes_follow_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(bulk_waits_for_the_callback, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
