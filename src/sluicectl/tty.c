/* Terminal handling for exec/attach: raw mode and its restoration. */
#include "tty.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved_tio;
static int raw_fd = -1;
static int saved_fl[3] = {-1, -1, -1};
static volatile sig_atomic_t guarded;

void ctl_tty_restore(void)
{
    if (raw_fd >= 0) {
        tcsetattr(raw_fd, TCSAFLUSH, &saved_tio);
        raw_fd = -1;
    }
    for (int fd = 0; fd < 3; fd++)
        if (saved_fl[fd] >= 0)
            fcntl(fd, F_SETFL, saved_fl[fd]);
}

/* Restores, then dies of the same signal so the parent sees it. */
static void on_fatal(int sig)
{
    ctl_tty_restore();
    signal(sig, SIG_DFL);
    raise(sig);
}

void ctl_tty_guard(void)
{
    if (guarded)
        return;
    guarded = 1;
    for (int fd = 0; fd < 3; fd++)
        saved_fl[fd] = fcntl(fd, F_GETFL);
    atexit(ctl_tty_restore);
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

int ctl_tty_raw(int fd)
{
    struct termios t;
    if (tcgetattr(fd, &t) < 0)
        return -1;
    saved_tio = t;
    cfmakeraw(&t);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(fd, TCSAFLUSH, &t) < 0)
        return -1;
    raw_fd = fd;
    return 0;
}

bool ctl_tty_size(uint16_t *width, uint16_t *height)
{
    struct winsize ws;
    for (int fd = 0; fd < 3; fd++)
        if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
            *width = ws.ws_col;
            *height = ws.ws_row;
            return true;
        }
    return false;
}
