#include "mon_journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

#define NOTE_MAGIC 0x534c4a31u /* "SLJ1" */

static const char *const journal_names[2] = {"stdout.journal", "stderr.journal"};

/* Where the records of the chunk in a stream's journal go: the log file
 * (device, inode) and its size before and after them. All zero: none. */
typedef struct note {
    uint32_t magic;
    uint32_t stream;
    uint64_t dev, ino;
    uint64_t from, to;
    uint64_t sum; /* of the fields above: a torn write reads as no note */
} note;

static uint64_t note_sum(const note *n)
{
    const unsigned char *p = (const unsigned char *)n;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < offsetof(note, sum); i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static int write_note(mon_journal *j, const note *n)
{
    ssize_t w;
    do
        w = pwrite(j->note_fd, n, sizeof(*n), 0);
    while (w < 0 && errno == EINTR);
    if (w >= 0 && w != (ssize_t)sizeof(*n))
        errno = EIO;
    return w == (ssize_t)sizeof(*n) ? 0 : -1;
}

/* The note for stream s, if there is a whole one. */
static bool read_note(mon_journal *j, int s, note *n)
{
    ssize_t r;
    do
        r = pread(j->note_fd, n, sizeof(*n), 0);
    while (r < 0 && errno == EINTR);
    return r == (ssize_t)sizeof(*n) && n->magic == NOTE_MAGIC && n->stream == (uint32_t)s &&
           n->sum == note_sum(n);
}

void mon_journal_init(mon_journal *j)
{
    j->fd[0] = j->fd[1] = j->note_fd = -1;
}

static int open_in(const char *dir, const char *name, int flags, sl_error *e)
{
    SL_AUTOFREE char *path = sl_path_join(dir, name);
    int fd = path ? open(path, flags, 0600) : -1;
    if (fd < 0)
        sl_error_set(e, path ? errno : ENOMEM, "open %s/%s", dir, name);
    return fd;
}

int mon_journal_open(mon_journal *j, const char *dir, bool resume, sl_error *e)
{
    int flags = O_RDWR | O_CREAT | O_CLOEXEC | (resume ? 0 : O_TRUNC);
    mon_journal_init(j);
    if ((j->fd[0] = open_in(dir, journal_names[0], flags, e)) < 0 ||
        (j->fd[1] = open_in(dir, journal_names[1], flags, e)) < 0 ||
        (j->note_fd = open_in(dir, "journal.note", flags, e)) < 0) {
        mon_journal_close(j);
        return -1;
    }
    return 0;
}

void mon_journal_close(mon_journal *j)
{
    for (int s = 0; s < 2; s++)
        if (j->fd[s] >= 0)
            close(j->fd[s]);
    if (j->note_fd >= 0)
        close(j->note_fd);
    mon_journal_init(j);
}

/* Copies the first n bytes of fd to buf. */
static int read_back(int fd, char *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(fd, buf + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

ssize_t mon_journal_take(mon_journal *j, int s, int pipe_fd, char *buf, size_t cap)
{
    loff_t off = 0;
    ssize_t n;
    do
        n = splice(pipe_fd, NULL, j->fd[s], &off, cap, SPLICE_F_NONBLOCK);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return n;
    return read_back(j->fd[s], buf, (size_t)n) < 0 ? -1 : n;
}

int mon_journal_pending(mon_journal *j, int s, int log_fd, size_t len)
{
    struct stat st;
    if (fstat(log_fd, &st) < 0)
        return -1;
    note n = {.magic = NOTE_MAGIC,
              .stream = (uint32_t)s,
              .dev = (uint64_t)st.st_dev,
              .ino = (uint64_t)st.st_ino,
              .from = (uint64_t)st.st_size,
              .to = (uint64_t)st.st_size + len};
    n.sum = note_sum(&n);
    return write_note(j, &n);
}

int mon_journal_logged(mon_journal *j, int s)
{
    static const note none;
    int rc;
    do /* the journal first: an empty one is never logged again, whatever the note */
        rc = ftruncate(j->fd[s], 0);
    while (rc < 0 && errno == EINTR);
    return rc < 0 ? -1 : write_note(j, &none);
}

/* The note's records went out whole: the log is the same file and
 * reaches their end (a log reopened since was reopened after them). */
static bool went_out(const note *n, const struct stat *log)
{
    return (uint64_t)log->st_dev != n->dev || (uint64_t)log->st_ino != n->ino ||
           (uint64_t)log->st_size >= n->to;
}

ssize_t mon_journal_recover(mon_journal *j, int s, int log_fd, char *buf, size_t cap, size_t *cut)
{
    struct stat st, log;
    note n;
    *cut = 0;
    bool noted = read_note(j, s, &n);
    if (fstat(j->fd[s], &st) < 0)
        return -1;
    if (st.st_size == 0) /* nothing was pending; a note left behind must not outlive it */
        return noted ? mon_journal_logged(j, s) : 0;
    if ((size_t)st.st_size > cap) {
        errno = EFBIG;
        return -1;
    }
    if (noted && log_fd >= 0) {
        if (fstat(log_fd, &log) < 0)
            return -1;
        if (went_out(&n, &log))
            return mon_journal_logged(j, s);
        if ((uint64_t)log.st_size > n.from) { /* it ends inside the chunk's records */
            if (ftruncate(log_fd, (off_t)n.from) < 0)
                return -1;
            *cut = (size_t)((uint64_t)log.st_size - n.from);
        }
    }
    return read_back(j->fd[s], buf, (size_t)st.st_size) < 0 ? -1 : st.st_size;
}
