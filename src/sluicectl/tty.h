/* The local terminal for exec/attach -t: raw mode restored on every exit
 * path (normal return, exit(), and SIGINT/SIGTERM/SIGHUP/SIGQUIT), fd
 * flags restored too (the streaming client makes fds non-blocking). */
#ifndef SLUICECTL_TTY_H
#define SLUICECTL_TTY_H

#include <stdbool.h>
#include <stdint.h>

/* Remembers the flags of fds 0-2 so they are restored at exit. Call once,
 * before anything changes them. Installs the signal handlers. */
void ctl_tty_guard(void);
/* Puts fd (a terminal) into raw mode. Returns 0, or -1 (errno). */
int ctl_tty_raw(int fd);
/* Restores the terminal and fd flags; idempotent and signal-safe. */
void ctl_tty_restore(void);
/* The window size of the first terminal among fd 0, 1, 2. */
bool ctl_tty_size(uint16_t *width, uint16_t *height);

#endif
