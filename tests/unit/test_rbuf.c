#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/rbuf.h"

/* One buffer per thread and kind, the same on every call: what every
 * connection (and every process pump) of a loop reads into. */
static void one_per_thread_and_kind(void **state)
{
    (void)state;
    uint8_t *conn = sl_rbuf_get(SL_RBUF_CONN), *proc = sl_rbuf_get(SL_RBUF_PROC);
    assert_non_null(conn);
    assert_non_null(proc);
    assert_ptr_not_equal(conn, proc);
    assert_ptr_equal(sl_rbuf_get(SL_RBUF_CONN), conn);
    assert_ptr_equal(sl_rbuf_get(SL_RBUF_PROC), proc);
    memset(conn, 0xa5, SL_RBUF_SIZE); /* all of it is ours (ASan: no overflow) */
    memset(proc, 0x5a, SL_RBUF_SIZE);
    assert_int_equal(conn[SL_RBUF_SIZE - 1], 0xa5);
}

static void *other_thread(void *arg)
{
    uint8_t **out = arg;
    out[0] = sl_rbuf_get(SL_RBUF_CONN);
    out[1] = sl_rbuf_get(SL_RBUF_CONN);
    if (out[0])
        memset(out[0], 1, SL_RBUF_SIZE);
    return NULL; /* its buffer is freed at its exit (LeakSanitizer checks) */
}

/* Another thread (another loop) has its own. */
static void threads_do_not_share(void **state)
{
    (void)state;
    uint8_t *mine = sl_rbuf_get(SL_RBUF_CONN), *theirs[2] = {NULL, NULL};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, theirs), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_non_null(theirs[0]);
    assert_ptr_equal(theirs[0], theirs[1]);
    assert_ptr_not_equal(theirs[0], mine);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_per_thread_and_kind),
        cmocka_unit_test(threads_do_not_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
