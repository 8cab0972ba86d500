/* Fuzzes the sluice-mon control codec: packets through a real SEQPACKET
 * socket into sl_mon_conn_recv, sl_mon_decode with any fd count, the field
 * helpers on whatever decoded, and encode/decode round trips. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mon_proto.h"
#include "sluice/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keys[] = {"type",  "id",      "container_id", "exec_id", "session",
                                   "width", "timeout", "tty",          "stdin",   "cmd"};

static void exercise(const json_t *m, size_t nfds)
{
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        int64_t v;
        bool b;
        sl_mon_int(m, keys[i], 0, 65535, 0, &v);
        sl_mon_bool(m, keys[i], false, &b);
        const char *s = sl_mon_str(m, keys[i]);
        if (s)
            sl_mon_valid_id(s);
        sl_mon_fd_index(m, keys[i]);
    }
    json_t *r = sl_mon_reply(m, false, "x");
    json_decref(r);
    char *out;
    size_t len;
    int rc = sl_mon_encode(m, nfds, &out, &len);
    if (rc == SL_OK) {
        json_t *again = NULL;
        if (sl_mon_decode(out, len, nfds, &again) != SL_OK || !json_equal(m, again))
            abort(); /* what we encode we must read back */
        json_decref(again);
        free(out);
    } else if (rc != SL_ERR_TOO_LARGE) {
        abort(); /* a decoded message is always encodable */
    }
}

static void via_socket(const uint8_t *data, size_t size)
{
    static int sv[2] = {-1, -1};
    if (sv[0] < 0 && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv) < 0)
        return;
    if (size == 0 || size > SL_MON_MAX_MESSAGE + 16)
        return;
    if (send(sv[0], data, size, MSG_NOSIGNAL) != (ssize_t)size)
        return;
    sl_mon_conn c;
    sl_mon_conn_init(&c, sv[1]);
    json_t *m;
    int fds[SL_MON_MAX_FDS];
    size_t n;
    if (sl_mon_conn_recv(&c, &m, fds, &n) == SL_OK) {
        exercise(m, n);
        json_decref(m);
    }
    sl_mon_conn_fini(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *m;
    size_t nfds = size ? data[0] % (SL_MON_MAX_FDS + 1) : 0;
    if (sl_mon_decode(data, size, nfds, &m) == SL_OK) {
        exercise(m, nfds);
        json_decref(m);
    }
    via_socket(data, size);
    return 0;
}
