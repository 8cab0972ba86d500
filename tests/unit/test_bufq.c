#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/bufq.h"
#include "sluice/error.h"

static void append_peek_consume(void **state)
{
    (void)state;
    sl_bufq q;
    sl_bufq_init(&q);
    uint8_t big[3 * SL_BUFQ_CHUNK + 7];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 31);
    assert_int_equal(sl_bufq_append(&q, big, sizeof(big)), SL_OK);
    assert_int_equal(sl_bufq_len(&q), sizeof(big));
    struct iovec iov[8];
    int n = sl_bufq_peek(&q, iov, 8);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        assert_memory_equal(iov[i].iov_base, big + total, iov[i].iov_len);
        total += iov[i].iov_len;
    }
    assert_int_equal(total, sizeof(big));
    /* consume at every kind of boundary */
    sl_bufq_consume(&q, 5);
    uint8_t tmp[16];
    assert_int_equal(sl_bufq_copyout(&q, tmp, 16), 16);
    assert_memory_equal(tmp, big + 5, 16);
    sl_bufq_consume(&q, SL_BUFQ_CHUNK);
    assert_int_equal(sl_bufq_len(&q), sizeof(big) - 5 - SL_BUFQ_CHUNK);
    assert_int_equal(sl_bufq_copyout(&q, tmp, 16), 16);
    assert_memory_equal(tmp, big + 5 + SL_BUFQ_CHUNK, 16);
    sl_bufq_consume(&q, sl_bufq_len(&q));
    assert_int_equal(sl_bufq_len(&q), 0);
    assert_int_equal(sl_bufq_peek(&q, iov, 8), 0);
    sl_bufq_fini(&q);
}

static void reserve_commit_and_printf(void **state)
{
    (void)state;
    sl_bufq q;
    sl_bufq_init(&q);
    size_t avail;
    uint8_t *p = sl_bufq_reserve(&q, 100000, &avail);
    assert_non_null(p);
    assert_true(avail >= 100000);
    memset(p, 'x', 100000);
    sl_bufq_commit(&q, 100000);
    assert_int_equal(sl_bufq_appendf(&q, "%s %d", "hello", 42), SL_OK);
    assert_int_equal(sl_bufq_len(&q), 100000 + 8);
    sl_bufq_consume(&q, 100000);
    char out[9] = {0};
    assert_int_equal(sl_bufq_copyout(&q, out, 8), 8);
    assert_string_equal(out, "hello 42");
    sl_bufq_fini(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(append_peek_consume),
        cmocka_unit_test(reserve_commit_and_printf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
