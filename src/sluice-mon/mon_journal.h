/* The output journal: what the monitor takes from a container's stdout or
 * stderr pipe stays in a file of the container's run directory until its
 * records are in the CRI log, so a monitor killed at any instant neither
 * loses output nor logs it twice.
 *
 * One chunk at a time (the monitor has one thread): `take` moves a chunk
 * from the pipe into stream s's empty journal (splice: taken and kept in
 * one step); `pending` notes, before the chunk's records are written,
 * where in which log file they will end (offset before and after); once
 * they are written `logged` empties the journal and clears the note. The
 * monitor that adopts the container calls `recover`: a journal that is
 * not empty holds a chunk whose records are not (all) in the log, unless
 * the note says they went out whole; a log that ends inside the chunk's
 * records is cut back to where they began, and the chunk is logged again.
 * The note is one small record written in place (and checked: a torn one
 * counts as none, which is right at either write that can tear it). */
#ifndef SL_MON_JOURNAL_H
#define SL_MON_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sys_error.h"

typedef struct mon_journal {
    int fd[2];   /* stdout's and stderr's journal, -1 when not open */
    int note_fd; /* the note, -1 when not open */
} mon_journal;

void mon_journal_init(mon_journal *j);
/* Opens (creating) the journal files in dir: emptied when !resume, as
 * left by a dead monitor when resume. Returns 0 or -1 (*e). */
int mon_journal_open(mon_journal *j, const char *dir, bool resume, sl_error *e);
void mon_journal_close(mon_journal *j);
/* Moves up to cap bytes from pipe_fd (non-blocking) into stream s's
 * journal and copies them to buf. Returns their count, 0 at EOF, or -1
 * (errno; EAGAIN: nothing there). */
ssize_t mon_journal_take(mon_journal *j, int s, int pipe_fd, char *buf, size_t cap);
/* The chunk in stream s's journal is about to go to log_fd as len bytes
 * of records appended at its end. Returns 0 or -1 (errno). */
int mon_journal_pending(mon_journal *j, int s, int log_fd, size_t len);
/* Stream s's chunk is in the log (or dropped by it): the journal empties.
 * Returns 0 or -1 (errno). */
int mon_journal_logged(mon_journal *j, int s);
/* After a monitor died: the chunk stream s's journal holds that is not in
 * log_fd (-1: no log), copied to buf (cap bytes), after cutting log_fd
 * back to where its records began (*cut: the bytes cut off, else 0).
 * Returns its size, 0 when there is nothing to log again, -1 (errno).
 * The chunk stays in the journal: log it like a new one (pending, then
 * logged). */
ssize_t mon_journal_recover(mon_journal *j, int s, int log_fd, char *buf, size_t cap, size_t *cut);

#endif
