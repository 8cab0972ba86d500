/* The output journal: a chunk taken from a pipe is logged again by the
 * next monitor exactly when its records are not whole in the log, a log
 * that ends inside them is cut back, and a note that is torn, stale or
 * about another file never makes a chunk count as logged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "mon_journal.h"

static char dir[] = "/tmp/test_mon_journal.XXXXXX";
static size_t cut; /* what the last recovery cut off the log */

typedef struct fixture {
    mon_journal j;
    int pipe[2];
    int log_fd;
    char buf[4096];
} fixture;

static char *path_of(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof(buf), "%s/%s", dir, name);
    return buf;
}

static int open_log(const char *name)
{
    return open(path_of(name), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

static int setup(void **state)
{
    strcpy(dir, "/tmp/test_mon_journal.XXXXXX");
    fixture *f = calloc(1, sizeof(*f));
    sl_error e;
    if (!f || !mkdtemp(dir) || mon_journal_open(&f->j, dir, false, &e) < 0 ||
        pipe2(f->pipe, O_NONBLOCK | O_CLOEXEC) < 0 || (f->log_fd = open_log("log")) < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    mon_journal_close(&f->j);
    close(f->pipe[0]);
    close(f->pipe[1]);
    close(f->log_fd);
    free(f);
    return sl_rm_rf(dir, NULL);
}

static off_t size_of(int fd)
{
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    return st.st_size;
}

/* A monitor that died: the journal files as it left them. */
static void die_and_adopt(fixture *f)
{
    sl_error e;
    mon_journal_close(&f->j);
    assert_int_equal(mon_journal_open(&f->j, dir, true, &e), 0);
}

static void take(fixture *f, int s, const char *text)
{
    assert_int_equal(write(f->pipe[1], text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(mon_journal_take(&f->j, s, f->pipe[0], f->buf, sizeof(f->buf)),
                     (ssize_t)strlen(text));
    assert_memory_equal(f->buf, text, strlen(text));
}

static void log_text(fixture *f, const char *text)
{
    assert_int_equal(write(f->log_fd, text, strlen(text)), (ssize_t)strlen(text));
}

static void assert_recovers(fixture *f, int s, const char *text)
{
    memset(f->buf, 0, sizeof(f->buf));
    assert_int_equal(mon_journal_recover(&f->j, s, f->log_fd, f->buf, sizeof(f->buf), &cut),
                     (ssize_t)strlen(text));
    assert_memory_equal(f->buf, text, strlen(text));
}

static void test_take_empty_and_eof(void **state)
{
    fixture *f = *state;
    errno = 0;
    assert_int_equal(mon_journal_take(&f->j, 0, f->pipe[0], f->buf, sizeof(f->buf)), -1);
    assert_int_equal(errno, EAGAIN);
    take(f, 0, "a\nb");
    assert_int_equal(size_of(f->j.fd[0]), 3);
    assert_int_equal(mon_journal_logged(&f->j, 0), 0);
    assert_int_equal(size_of(f->j.fd[0]), 0);
    close(f->pipe[1]);
    f->pipe[1] = open("/dev/null", O_WRONLY);
    assert_int_equal(mon_journal_take(&f->j, 0, f->pipe[0], f->buf, sizeof(f->buf)), 0);
}

/* Killed between taking and noting: the chunk was never logged. */
static void test_taken_not_noted(void **state)
{
    fixture *f = *state;
    log_text(f, "old record\n");
    take(f, 1, "err line\n");
    die_and_adopt(f);
    assert_recovers(f, 1, "err line\n");
    assert_int_equal(size_of(f->log_fd), 11);
    assert_int_equal(mon_journal_recover(&f->j, 0, f->log_fd, f->buf, sizeof(f->buf), &cut), 0);
}

/* Killed inside the log write: the log is cut back to the chunk's start
 * and the chunk logged again. */
static void test_torn_write_cut_back(void **state)
{
    fixture *f = *state;
    log_text(f, "old record\n");
    take(f, 0, "x\ny\n");
    assert_int_equal(mon_journal_pending(&f->j, 0, f->log_fd, 20), 0);
    log_text(f, "T stdout F x\nT std"); /* 18 of the 20 bytes */
    die_and_adopt(f);
    assert_recovers(f, 0, "x\ny\n");
    assert_int_equal(cut, 18);
    assert_int_equal(size_of(f->log_fd), 11);
    /* noted, nothing written yet: nothing to cut */
    assert_int_equal(mon_journal_pending(&f->j, 0, f->log_fd, 20), 0);
    die_and_adopt(f);
    assert_recovers(f, 0, "x\ny\n");
    assert_int_equal(cut, 0);
    assert_int_equal(size_of(f->log_fd), 11);
}

/* Killed after the log write, before letting go: logged once only. */
static void test_written_not_let_go(void **state)
{
    fixture *f = *state;
    take(f, 0, "x\n");
    assert_int_equal(mon_journal_pending(&f->j, 0, f->log_fd, 13), 0);
    log_text(f, "T stdout F x\n");
    die_and_adopt(f);
    assert_int_equal(mon_journal_recover(&f->j, 0, f->log_fd, f->buf, sizeof(f->buf), &cut), 0);
    assert_int_equal(size_of(f->j.fd[0]), 0);
    assert_int_equal(size_of(f->log_fd), 13);
    /* the next chunk, taken and not noted, is not taken for logged */
    take(f, 0, "y\n");
    die_and_adopt(f);
    assert_recovers(f, 0, "y\n");
}

/* Killed between emptying the journal and clearing the note: the stale
 * note must not make the next chunk count as logged. */
static void test_stale_note(void **state)
{
    fixture *f = *state;
    take(f, 0, "x\n");
    assert_int_equal(mon_journal_pending(&f->j, 0, f->log_fd, 13), 0);
    log_text(f, "T stdout F x\n");
    assert_int_equal(ftruncate(f->j.fd[0], 0), 0); /* the note stays */
    die_and_adopt(f);
    assert_int_equal(mon_journal_recover(&f->j, 0, f->log_fd, f->buf, sizeof(f->buf), &cut), 0);
    take(f, 0, "y\n");
    die_and_adopt(f);
    assert_recovers(f, 0, "y\n");
}

/* A note is for one stream, one file, and whole. */
static void test_note_scope(void **state)
{
    fixture *f = *state;
    take(f, 1, "e\n");
    assert_int_equal(mon_journal_pending(&f->j, 1, f->log_fd, 13), 0);
    log_text(f, "T stderr F e\n");
    /* stdout's journal is empty: its recovery leaves stderr's note alone */
    die_and_adopt(f);
    assert_int_equal(mon_journal_recover(&f->j, 0, f->log_fd, f->buf, sizeof(f->buf), &cut), 0);
    assert_int_equal(mon_journal_recover(&f->j, 1, f->log_fd, f->buf, sizeof(f->buf), &cut), 0);

    /* a torn note: the chunk is logged again */
    take(f, 0, "o\n");
    assert_int_equal(mon_journal_pending(&f->j, 0, f->log_fd, 13), 0);
    log_text(f, "T stdout F o\n");
    assert_int_equal(pwrite(f->j.note_fd, "\xff", 1, 12), 1);
    die_and_adopt(f);
    assert_recovers(f, 0, "o\n");
}

/* The log was reopened (rotated) after the chunk's write: it went out,
 * and the new file, smaller than the note's end, is never cut. */
static void test_rotated_log(void **state)
{
    fixture *f = *state;
    log_text(f, "old record\n");
    take(f, 0, "x\n");
    assert_int_equal(mon_journal_pending(&f->j, 0, f->log_fd, 13), 0);
    log_text(f, "T stdout F x\n");
    close(f->log_fd);
    char rotated[256];
    snprintf(rotated, sizeof(rotated), "%s", path_of("log.1"));
    assert_int_equal(rename(path_of("log"), rotated), 0);
    f->log_fd = open_log("log");
    log_text(f, "n\n");
    die_and_adopt(f);
    assert_int_equal(mon_journal_recover(&f->j, 0, f->log_fd, f->buf, sizeof(f->buf), &cut), 0);
    assert_int_equal(size_of(f->log_fd), 2);
}

/* A new container's journal starts empty whatever an old one left. */
static void test_fresh_open_empties(void **state)
{
    fixture *f = *state;
    sl_error e;
    take(f, 0, "left over\n");
    mon_journal_close(&f->j);
    assert_int_equal(mon_journal_open(&f->j, dir, false, &e), 0);
    assert_int_equal(mon_journal_recover(&f->j, 0, f->log_fd, f->buf, sizeof(f->buf), &cut), 0);
    mon_journal_close(&f->j);
    assert_int_equal(mon_journal_open(&f->j, "/nonexistent/dir", false, &e), -1);
    assert_int_equal(e.errnum, ENOENT);
    assert_non_null(strstr(e.msg, "stdout.journal"));
    assert_int_equal(mon_journal_open(&f->j, dir, false, &e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_take_empty_and_eof, setup, teardown),
        cmocka_unit_test_setup_teardown(test_taken_not_noted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_write_cut_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_written_not_let_go, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_note, setup, teardown),
        cmocka_unit_test_setup_teardown(test_note_scope, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rotated_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fresh_open_empties, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
