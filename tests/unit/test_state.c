#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "state/state.h"

static void save_load_list_remove(void **state)
{
    (void)state;
    char root[] = "/tmp/sl-state-XXXXXX";
    assert_non_null(mkdtemp(root));
    sl_error e;
    char **ids;
    size_t n;
    assert_int_equal(sl_state_list(root, "pods", &ids, &n, &e), 0); /* no kind dir yet */
    assert_int_equal(n, 0);
    json_t *a = json_pack("{s:s, s:i}", "name", "a", "state", 0);
    json_t *b = json_pack("{s:s, s:i}", "name", "b", "state", 1);
    assert_int_equal(sl_state_save(root, "pods", "bbb", b, &e), 0);
    assert_int_equal(sl_state_save(root, "pods", "aaa", a, &e), 0);
    /* an interrupted create: a directory without a record is not listed */
    char *half = sl_state_dir(root, "pods", "half");
    assert_int_equal(sl_mkdir_p(half, 0700, &e), 0);
    free(half);
    assert_int_equal(sl_state_list(root, "pods", &ids, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_string_equal(ids[0], "aaa");
    assert_string_equal(ids[1], "bbb");
    sl_state_ids_free(ids, n);
    json_t *got = sl_state_load(root, "pods", "bbb", &e);
    assert_non_null(got);
    assert_true(json_equal(got, b));
    json_decref(got);
    /* overwrite is atomic and complete */
    json_object_set_new(b, "state", json_integer(0));
    assert_int_equal(sl_state_save(root, "pods", "bbb", b, &e), 0);
    got = sl_state_load(root, "pods", "bbb", &e);
    assert_int_equal(json_integer_value(json_object_get(got, "state")), 0);
    json_decref(got);
    assert_null(sl_state_load(root, "pods", "nope", &e));
    assert_int_equal(e.errnum, 2 /* ENOENT */);
    assert_int_equal(sl_state_remove(root, "pods", "aaa", &e), 0);
    assert_int_equal(sl_state_remove(root, "pods", "aaa", &e), 0); /* idempotent */
    assert_int_equal(sl_state_list(root, "pods", &ids, &n, &e), 0);
    assert_int_equal(n, 1);
    sl_state_ids_free(ids, n);
    json_decref(a);
    json_decref(b);
    sl_rm_rf(root, &e);
}

static void corrupt_record_is_an_error(void **state)
{
    (void)state;
    char root[] = "/tmp/sl-state-XXXXXX";
    assert_non_null(mkdtemp(root));
    sl_error e;
    char *dir = sl_state_dir(root, "containers", "c1");
    assert_int_equal(sl_mkdir_p(dir, 0700, &e), 0);
    char *path = sl_path_join(dir, "record.json");
    assert_int_equal(sl_write_file_atomic(path, "{\"trunc", 7, 0600, &e), 0);
    assert_null(sl_state_load(root, "containers", "c1", &e));
    assert_non_null(strstr(e.msg, "record.json"));
    free(dir);
    free(path);
    sl_rm_rf(root, &e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(save_load_list_remove),
        cmocka_unit_test(corrupt_record_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
