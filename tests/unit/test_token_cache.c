#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/base64.h"
#include "server/token_cache.h"
#include "sluice/error.h"

/* getrandom() is replaced for this executable so tests can inject EINTR,
 * short reads, failures and a stuck generator (duplicate tokens). By default
 * it forwards to the real system call. */
enum rnd_mode { RND_REAL, RND_EINTR_SHORT, RND_CONSTANT, RND_FAIL };
static enum rnd_mode rnd_mode = RND_REAL;
static int rnd_calls;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    rnd_calls++;
    switch (rnd_mode) {
    case RND_REAL:
        return syscall(SYS_getrandom, buf, len, flags);
    case RND_EINTR_SHORT: /* odd calls: EINTR; even calls: at most 3 bytes */
        if (rnd_calls % 2) {
            errno = EINTR;
            return -1;
        }
        len = len > 3 ? 3 : len;
        for (size_t i = 0; i < len; i++)
            ((uint8_t *)buf)[i] = (uint8_t)(rnd_calls * 7 + (int)i);
        return (ssize_t)len;
    case RND_CONSTANT:
        memset(buf, 0x5a, len);
        return (ssize_t)len;
    case RND_FAIL:
        errno = ENOSYS;
        return -1;
    }
    return -1;
}

typedef struct item {
    int freed;    /* times free_fn saw it */
    int returned; /* times consume handed it back */
} item;

static int total_freed;

static void item_free(void *p)
{
    ((item *)p)->freed++;
    total_freed++;
}

static int setup(void **state)
{
    (void)state;
    rnd_mode = RND_REAL;
    rnd_calls = 0;
    total_freed = 0;
    return 0;
}

static void check_token_shape(const char *t)
{
    assert_int_equal(strlen(t), SL_TOKEN_LEN);
    for (size_t i = 0; i < SL_TOKEN_LEN; i++) {
        char c = t[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_';
        assert_true(ok);
    }
}

static void *consume(sl_token_cache *c, const char *t, sl_token_kind k, uint64_t now)
{
    return sl_token_cache_consume(c, t, strlen(t), k, now);
}

static void insert_consume_single_use(void **state)
{
    (void)state;
    sl_token_cache *c = sl_token_cache_new(10, 60000, item_free);
    assert_non_null(c);
    item a = {0}, b = {0};
    char ta[SL_TOKEN_LEN + 1], tb[SL_TOKEN_LEN + 1];
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &a, 1000, ta), SL_OK);
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_PORTFORWARD, &b, 1000, tb), SL_OK);
    check_token_shape(ta);
    check_token_shape(tb);
    assert_string_not_equal(ta, tb);
    assert_int_equal(sl_token_cache_pending(c, 1000), 2);
    assert_ptr_equal(consume(c, ta, SL_TOKEN_EXEC, 2000), &a);
    assert_null(consume(c, ta, SL_TOKEN_EXEC, 2000)); /* single use */
    assert_int_equal(sl_token_cache_pending(c, 2000), 1);
    assert_ptr_equal(consume(c, tb, SL_TOKEN_PORTFORWARD, 2000), &b);
    assert_int_equal(sl_token_cache_pending(c, 2000), 0);
    sl_token_cache_free(c);
    assert_int_equal(total_freed, 0); /* consumed payloads are the caller's */
}

static void wrong_kind_consumes(void **state)
{
    (void)state;
    sl_token_cache *c = sl_token_cache_new(10, 60000, item_free);
    item a = {0};
    char t[SL_TOKEN_LEN + 1];
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &a, 0, t), SL_OK);
    assert_null(consume(c, t, SL_TOKEN_ATTACH, 1));
    assert_int_equal(a.freed, 1);
    assert_null(consume(c, t, SL_TOKEN_EXEC, 1)); /* gone for good */
    assert_int_equal(sl_token_cache_pending(c, 1), 0);
    sl_token_cache_free(c);
    assert_int_equal(a.freed, 1);
}

static void expiry_at_exactly_ttl(void **state)
{
    (void)state;
    sl_token_cache *c = sl_token_cache_new(10, 1000, item_free);
    item live = {0}, dead = {0}, counted = {0};
    char tl[SL_TOKEN_LEN + 1], td[SL_TOKEN_LEN + 1], tc[SL_TOKEN_LEN + 1];
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &live, 5000, tl), SL_OK);
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &dead, 5000, td), SL_OK);
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_ATTACH, &counted, 5000, tc), SL_OK);
    assert_ptr_equal(consume(c, tl, SL_TOKEN_EXEC, 5999), &live);
    assert_null(consume(c, td, SL_TOKEN_EXEC, 6000)); /* removed even though expired */
    assert_int_equal(dead.freed, 1);
    assert_int_equal(sl_token_cache_pending(c, 5999), 1);
    assert_int_equal(counted.freed, 0);
    assert_int_equal(sl_token_cache_pending(c, 6000), 0); /* collected here */
    assert_int_equal(counted.freed, 1);
    assert_null(consume(c, tc, SL_TOKEN_ATTACH, 5000)); /* collection is final */
    sl_token_cache_free(c);
    assert_int_equal(live.freed + dead.freed + counted.freed, 2);
}

static void full_cache(void **state)
{
    (void)state;
    sl_token_cache *c = sl_token_cache_new(3, 60000, item_free);
    item it[4] = {0};
    char t[4][SL_TOKEN_LEN + 1];
    for (int i = 0; i < 3; i++)
        assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &it[i], 10, t[i]), SL_OK);
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &it[3], 10, t[3]), SL_ERR_FULL);
    assert_int_equal(it[3].freed, 0); /* still the caller's */
    assert_ptr_equal(consume(c, t[1], SL_TOKEN_EXEC, 20), &it[1]);
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &it[3], 20, t[3]), SL_OK);
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &it[1], 20, t[1]), SL_ERR_FULL);
    assert_int_equal(sl_token_cache_pending(c, 20), 3);
    sl_token_cache_free(c);
    assert_int_equal(total_freed, 3); /* it[0], it[2], it[3] were never consumed */
    assert_int_equal(it[1].freed, 0);
}

static void expired_entries_free_room(void **state)
{
    (void)state;
    sl_token_cache *c = sl_token_cache_new(3, 100, item_free);
    item old[3] = {0}, fresh = {0};
    char t[SL_TOKEN_LEN + 1];
    for (int i = 0; i < 3; i++)
        assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_ATTACH, &old[i], (uint64_t)i, t), SL_OK);
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &fresh, 99, t), SL_ERR_FULL);
    assert_int_equal(total_freed, 0);
    /* at 101 the first two (inserted at 0 and 1) are dead, the third lives */
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &fresh, 101, t), SL_OK);
    assert_int_equal(old[0].freed, 1);
    assert_int_equal(old[1].freed, 1);
    assert_int_equal(old[2].freed, 0);
    assert_int_equal(sl_token_cache_pending(c, 101), 2);
    assert_ptr_equal(consume(c, t, SL_TOKEN_EXEC, 150), &fresh);
    sl_token_cache_free(c);
    assert_int_equal(old[2].freed, 1);
    assert_int_equal(fresh.freed, 0);
}

/* Every payload ends exactly once: handed back by consume or freed. */
static void churn(void **state)
{
    (void)state;
    enum { N = 10000, MAX = 8 };
    sl_token_cache *c = sl_token_cache_new(MAX, 50, item_free);
    item *items = calloc(N, sizeof(*items));
    char(*toks)[SL_TOKEN_LEN + 1] = calloc(N, sizeof(*toks));
    assert_non_null(items);
    assert_non_null(toks);
    uint32_t seed = 12345;
    int inserted = 0, full = 0;
    for (int i = 0; i < N; i++) {
        uint64_t now = (uint64_t)i * 3;
        seed = seed * 1103515245u + 12345u;
        sl_token_kind k = (sl_token_kind)(1 + (seed >> 16) % 3);
        int rc = sl_token_cache_insert(c, k, &items[i], now, toks[i]);
        if (rc == SL_ERR_FULL) {
            full++;
            toks[i][0] = '\0';
            continue;
        }
        assert_int_equal(rc, SL_OK);
        inserted++;
        int back = (int)((seed >> 8) % 4); /* consume an earlier one, maybe expired */
        if (i >= back && toks[i - back][0]) {
            void *p = consume(c, toks[i - back], k, now);
            if (p)
                ((item *)p)->returned++;
        }
        assert_true(sl_token_cache_pending(c, now) <= MAX);
    }
    sl_token_cache_free(c);
    int never = 0;
    for (int i = 0; i < N; i++) {
        if (!toks[i][0]) {
            assert_int_equal(items[i].freed + items[i].returned, 0);
            never++;
            continue;
        }
        assert_int_equal(items[i].freed + items[i].returned, 1);
    }
    assert_int_equal(never, full);
    assert_int_equal(inserted + full, N);
    assert_true(inserted > 0 && full > 0);
    free(items);
    free(toks);
}

static int cmp_tok(const void *a, const void *b)
{
    return memcmp(a, b, SL_TOKEN_LEN + 1);
}

static void many_distinct_tokens(void **state)
{
    (void)state;
    enum { N = 5000 };
    sl_token_cache *c = sl_token_cache_new(N, 60000, item_free);
    item *items = calloc(N, sizeof(*items));
    char(*toks)[SL_TOKEN_LEN + 1] = calloc(N, sizeof(*toks));
    for (int i = 0; i < N; i++) {
        assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &items[i], 0, toks[i]), SL_OK);
        check_token_shape(toks[i]);
    }
    assert_int_equal(sl_token_cache_pending(c, 0), N);
    /* consume in a scrambled order so lookups go through grown buckets */
    for (int i = 0; i < N; i++) {
        int j = (int)(((unsigned)i * 2654435761u) % N);
        if (items[j].returned)
            continue;
        assert_ptr_equal(consume(c, toks[j], SL_TOKEN_EXEC, 1), &items[j]);
        items[j].returned++;
    }
    size_t left = sl_token_cache_pending(c, 1);
    sl_token_cache_free(c);
    assert_int_equal((size_t)total_freed, left);
    qsort(toks, N, sizeof(*toks), cmp_tok);
    for (int i = 1; i < N; i++)
        assert_string_not_equal(toks[i - 1], toks[i]);
    for (int i = 0; i < N; i++)
        assert_int_equal(items[i].freed + items[i].returned, 1);
    free(items);
    free(toks);
}

static void free_unconsumed_once(void **state)
{
    (void)state;
    sl_token_cache *c = sl_token_cache_new(100, 10000, item_free);
    item it[20] = {0};
    char t[SL_TOKEN_LEN + 1];
    for (int i = 0; i < 20; i++)
        assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_ATTACH, &it[i], (uint64_t)i * 100, t),
                         SL_OK);
    assert_int_equal(total_freed, 0);
    /* at 10050 only the one inserted at 0 is dead */
    assert_int_equal(sl_token_cache_pending(c, 10050), 19);
    assert_int_equal(it[0].freed, 1);
    assert_int_equal(total_freed, 1);
    sl_token_cache_free(c);
    for (int i = 0; i < 20; i++)
        assert_int_equal(it[i].freed, 1);
    assert_int_equal(total_freed, 20);
    sl_token_cache_free(NULL);
}

static void bad_arguments(void **state)
{
    (void)state;
    sl_token_cache *c = sl_token_cache_new(4, 1000, NULL); /* no free_fn is fine */
    item a = {0};
    char t[SL_TOKEN_LEN + 1];
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, NULL, 0, t), SL_ERR_INVAL);
    assert_int_equal(sl_token_cache_insert(c, (sl_token_kind)0, &a, 0, t), SL_ERR_INVAL);
    assert_int_equal(sl_token_cache_insert(c, (sl_token_kind)4, &a, 0, t), SL_ERR_INVAL);
    assert_int_equal(sl_token_cache_insert(NULL, SL_TOKEN_EXEC, &a, 0, t), SL_ERR_INVAL);
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &a, 0, t), SL_OK);
    assert_null(sl_token_cache_consume(c, t, SL_TOKEN_LEN - 1, SL_TOKEN_EXEC, 0));
    assert_null(sl_token_cache_consume(c, NULL, SL_TOKEN_LEN, SL_TOKEN_EXEC, 0));
    assert_null(sl_token_cache_consume(NULL, t, SL_TOKEN_LEN, SL_TOKEN_EXEC, 0));
    char other[SL_TOKEN_LEN + 2];
    memcpy(other, t, sizeof(t));
    other[0] = other[0] == 'A' ? 'B' : 'A';
    assert_null(consume(c, other, SL_TOKEN_EXEC, 0));
    memcpy(other, t, SL_TOKEN_LEN);
    other[SL_TOKEN_LEN] = 'x'; /* longer than a token, same prefix */
    other[SL_TOKEN_LEN + 1] = '\0';
    assert_null(consume(c, other, SL_TOKEN_EXEC, 0));
    assert_int_equal(sl_token_cache_pending(c, 0), 1); /* misses remove nothing */
    assert_ptr_equal(consume(c, t, SL_TOKEN_EXEC, 999), &a);
    assert_int_equal(sl_token_cache_pending(NULL, 0), 0);
    sl_token_cache_free(c);
}

static void zero_limits_and_huge_ttl(void **state)
{
    (void)state;
    item a = {0};
    char t[SL_TOKEN_LEN + 1];
    sl_token_cache *c = sl_token_cache_new(0, 1000, item_free);
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &a, 0, t), SL_ERR_FULL);
    sl_token_cache_free(c);
    c = sl_token_cache_new(1, 0, item_free); /* TTL 0: dead on arrival */
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &a, 7, t), SL_OK);
    assert_null(consume(c, t, SL_TOKEN_EXEC, 7));
    assert_int_equal(a.freed, 1);
    sl_token_cache_free(c);
    c = sl_token_cache_new(1, UINT64_MAX, item_free); /* expiry saturates */
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &a, UINT64_MAX - 5, t), SL_OK);
    assert_int_equal(sl_token_cache_pending(c, UINT64_MAX - 1), 1);
    assert_ptr_equal(consume(c, t, SL_TOKEN_EXEC, UINT64_MAX - 1), &a);
    sl_token_cache_free(c);
    assert_int_equal(a.freed, 1);
}

static void random_eintr_and_short_reads(void **state)
{
    (void)state;
    sl_token_cache *c = sl_token_cache_new(4, 1000, item_free);
    item a = {0};
    char t[SL_TOKEN_LEN + 1];
    rnd_mode = RND_EINTR_SHORT;
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &a, 0, t), SL_OK);
    /* 16 bytes in 3-byte pieces = 6 reads, each after one EINTR */
    assert_int_equal(rnd_calls, 12);
    check_token_shape(t);
    rnd_mode = RND_REAL;
    assert_ptr_equal(consume(c, t, SL_TOKEN_EXEC, 1), &a);
    sl_token_cache_free(c);
}

static void random_failure_and_stuck_generator(void **state)
{
    (void)state;
    sl_token_cache *c = sl_token_cache_new(4, 1000, item_free);
    item a = {0}, b = {0};
    char t[SL_TOKEN_LEN + 1], t2[SL_TOKEN_LEN + 1];
    rnd_mode = RND_FAIL;
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &a, 0, t), SL_ERR_SYS);
    rnd_mode = RND_CONSTANT;
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &a, 0, t), SL_OK);
    uint8_t raw[SL_TOKEN_BYTES];
    char want[SL_TOKEN_LEN + 1];
    memset(raw, 0x5a, sizeof(raw)); /* the token is base64url of the random bytes */
    assert_int_equal(sl_base64_encode(want, raw, sizeof(raw), 1), SL_TOKEN_LEN);
    assert_string_equal(t, want);
    rnd_calls = 0;
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &b, 0, t2), SL_ERR_SYS);
    assert_int_equal(rnd_calls, 10); /* ten tries, all duplicates */
    assert_int_equal(b.freed, 0);
    assert_int_equal(sl_token_cache_pending(c, 0), 1);
    rnd_mode = RND_REAL;
    assert_int_equal(sl_token_cache_insert(c, SL_TOKEN_EXEC, &b, 0, t2), SL_OK);
    assert_ptr_equal(consume(c, t, SL_TOKEN_EXEC, 0), &a);
    sl_token_cache_free(c);
    assert_int_equal(b.freed, 1);
    assert_int_equal(a.freed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(insert_consume_single_use, setup),
        cmocka_unit_test_setup(wrong_kind_consumes, setup),
        cmocka_unit_test_setup(expiry_at_exactly_ttl, setup),
        cmocka_unit_test_setup(full_cache, setup),
        cmocka_unit_test_setup(expired_entries_free_room, setup),
        cmocka_unit_test_setup(churn, setup),
        cmocka_unit_test_setup(many_distinct_tokens, setup),
        cmocka_unit_test_setup(free_unconsumed_once, setup),
        cmocka_unit_test_setup(bad_arguments, setup),
        cmocka_unit_test_setup(zero_limits_and_huge_ttl, setup),
        cmocka_unit_test_setup(random_eintr_and_short_reads, setup),
        cmocka_unit_test_setup(random_failure_and_stuck_generator, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
