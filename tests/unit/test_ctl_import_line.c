/* sluicectl image import's progress lines (import_line.c), from the
 * "importProgress" info of sluiced's verbose ImageStatus answers: a line
 * per change of the bytes read or of the phase, a time line every
 * CTL_IMPORT_QUIET_MS while nothing else is said, and the old time lines
 * for answers without (valid) info. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "import_line.h"

#define NAME "localhost/a:1"
#define MIB (1u << 20)

static char line[512];

static const char *info(const char *phase, uint64_t rd, uint64_t tot)
{
    static char buf[256];
    snprintf(buf, sizeof buf,
             "{\"file\":\"/i/a.tar\",\"phase\":\"%s\",\"bytesRead\":%llu,\"bytesTotal\":%llu,"
             "\"secondsElapsed\":1.5}",
             phase, (unsigned long long)rd, (unsigned long long)tot);
    return buf;
}

static int say(const char *inf, uint64_t ms, ctl_import_seen *seen)
{
    line[0] = '\0';
    return ctl_import_line(NAME, inf, ms, seen, line, sizeof line);
}

static void test_bytes_lines(void **state)
{
    (void)state;
    ctl_import_seen seen = {0};
    assert_int_equal(say(info("reading", 123 * MIB + MIB / 2, 456 * MIB), 1000, &seen), 1);
    assert_string_equal(line, "sluicectl: importing " NAME ": 123.5 MiB of 456.0 MiB (27%)");
    /* the same bytes again: nothing new */
    assert_int_equal(say(info("reading", 123 * MIB + MIB / 2, 456 * MIB), 2000, &seen), 0);
    assert_int_equal(say(info("reading", 400 * MIB, 456 * MIB), 3000, &seen), 1);
    assert_string_equal(line, "sluicectl: importing " NAME ": 400.0 MiB of 456.0 MiB (87%)");
    /* read through: one line, then a time line every CTL_IMPORT_QUIET_MS */
    assert_int_equal(say(info("unpacking", 456 * MIB, 456 * MIB), 4000, &seen), 1);
    assert_string_equal(line,
                        "sluicectl: importing " NAME ": 456.0 MiB read, sluiced is unpacking it");
    assert_int_equal(say(info("unpacking", 456 * MIB, 456 * MIB), 8999, &seen), 0);
    assert_int_equal(say(info("unpacking", 456 * MIB, 456 * MIB), 9000, &seen), 1);
    assert_string_equal(line, "sluicectl: " NAME ": sluiced is unpacking it (9 s so far)");
}

static void test_slow_reading_still_says_time(void **state)
{
    (void)state;
    ctl_import_seen seen = {0};
    assert_int_equal(say(info("reading", 0, 10 * MIB), 1000, &seen), 1);
    assert_int_equal(say(info("reading", 0, 10 * MIB), 5999, &seen), 0);
    assert_int_equal(say(info("reading", 0, 10 * MIB), 6000, &seen), 1);
    assert_string_equal(line, "sluicectl: " NAME ": sluiced is importing it (6 s so far)");
}

static void test_queued(void **state)
{
    (void)state;
    ctl_import_seen seen = {0};
    assert_int_equal(say(info("queued", 0, 10 * MIB), 1000, &seen), 1);
    assert_string_equal(line,
                        "sluicectl: importing " NAME ": queued behind another import (/i/a.tar)");
    assert_int_equal(say(info("queued", 0, 10 * MIB), 2000, &seen), 0);
    assert_int_equal(say(info("reading", 0, 10 * MIB), 3000, &seen), 1);
    assert_string_equal(line, "sluicectl: importing " NAME ": 0.0 MiB of 10.0 MiB (0%)");
}

/* A runtime without the info (or an answer after the import ended, or
 * garbage): the time lines of sluicectl before byte progress. */
static void test_no_info(void **state)
{
    (void)state;
    ctl_import_seen seen = {0};
    const char *bad[] = {NULL,
                         "",
                         "not json",
                         "{\"phase\":\"reading\"}",
                         "{\"phase\":\"reading\",\"bytesRead\":-1,\"bytesTotal\":5}",
                         "{\"phase\":7,\"bytesRead\":1,\"bytesTotal\":5}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(say(bad[i], 1000 + i, &seen), 0);
    assert_int_equal(say(NULL, 5000, &seen), 1);
    assert_string_equal(line, "sluicectl: " NAME ": sluiced is importing it (5 s so far)");
    assert_int_equal(say("[]", 9999, &seen), 0);
    assert_int_equal(say(NULL, 10000, &seen), 1);
    assert_string_equal(line, "sluicectl: " NAME ": sluiced is importing it (10 s so far)");
}

static void test_empty_file_and_overrun(void **state)
{
    (void)state;
    ctl_import_seen seen = {0};
    assert_int_equal(say(info("reading", 0, 0), 100, &seen), 1);
    assert_string_equal(line, "sluicectl: importing " NAME ": 0.0 MiB of 0.0 MiB (0%)");
    assert_int_equal(say(info("reading", 3 * MIB, 2 * MIB), 200, &seen), 1);
    assert_string_equal(line, "sluicectl: importing " NAME ": 3.0 MiB of 2.0 MiB (100%)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_lines),
        cmocka_unit_test(test_slow_reading_still_says_time),
        cmocka_unit_test(test_queued),
        cmocka_unit_test(test_no_info),
        cmocka_unit_test(test_empty_file_and_overrun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
