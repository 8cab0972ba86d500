/* Client side of a remote-command session (exec/attach) after the
 * upgrade, over SPDY (protocol notes §5) or WebSocket (§6). I/O free:
 * socket bytes go in with sl_crc_recv(), every byte to write is appended
 * to `out` (SPDY stream data once sl_crc_flush() runs).
 *
 * SPDY: sl_crc_start() opens the streams client-go opens (error, stdin,
 * stdout, stderr unless tty, resize for tty on v3+), each with its
 * `streamtype` header, all at once; the session holds each stream's data
 * until its SYN_REPLY. stdin EOF is a FIN. The session is over when the
 * error stream and every output stream have ended (FIN, reset, GOAWAY);
 * a socket EOF before that is "connection lost" unless the server had
 * sent GOAWAY or finished the error stream.
 * WebSocket (v5, v4): binary channel messages; stdin EOF is the v5 CLOSE
 * message [255, 0] (v4 has none); the session is over at the server's
 * close frame: 1000 with the status from channel 3, anything else an
 * error. Text messages are a protocol error (client-go aborts on them).
 *
 * Callbacks fire from inside sl_crc_recv / sl_crc_eof (and sl_crc_start
 * for nothing); they may call any function here except sl_crc_free. */
#ifndef SL_CLIENT_CRC_H
#define SL_CLIENT_CRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/bufq.h"
#include "sluice/client.h"

/* Channel numbers (the WebSocket channel bytes). */
enum {
    SL_CRC_STDIN = 0,
    SL_CRC_STDOUT = 1,
    SL_CRC_STDERR = 2,
    SL_CRC_ERROR = 3,
    SL_CRC_RESIZE = 4
};

typedef struct sl_crc sl_crc;

typedef struct sl_crc_params {
    sl_transport transport; /* SL_TRANSPORT_SPDY or SL_TRANSPORT_WEBSOCKET */
    int version;            /* negotiated: 1..5 */
    bool tty, in, out, err; /* the streams of the CRI request */
    size_t max_ws_message;  /* 0 = SL_CLIENT_MAX_WS_MESSAGE */
    uint32_t spdy_window;   /* SPDY receive window to announce; 0 = none */
} sl_crc_params;

typedef struct sl_crc_end {
    bool exited;             /* the command ended: exit_code is valid */
    int exit_code;           /* 0..255 */
    sl_client_err_kind kind; /* when !exited */
    const char *message;     /* status message (exit code != 0) or error text; may be NULL */
} sl_crc_end;

typedef struct sl_crc_callbacks {
    /* Output for SL_CRC_STDOUT / SL_CRC_STDERR, in order. Call
     * sl_crc_consumed() as it leaves (flow-control credit). */
    void (*on_output)(void *arg, int ch, const uint8_t *data, size_t len);
    /* The server takes no more stdin (stream reset or closed). */
    void (*on_stdin_closed)(void *arg);
    /* An answer to sl_crc_ping(). */
    void (*on_pong)(void *arg);
    /* The session is over; nothing follows. end is valid during the call. */
    void (*on_end)(void *arg, const sl_crc_end *end);
} sl_crc_callbacks;

/* Returns NULL on ENOMEM (or a bad transport). out must outlive it. */
sl_crc *sl_crc_new(const sl_crc_params *p, const sl_crc_callbacks *cb, void *arg, sl_bufq *out);
void sl_crc_free(sl_crc *c);

/* SPDY: opens the streams. Returns SL_OK or a negative sl_err. */
int sl_crc_start(sl_crc *c);
/* Bytes from the socket. Returns SL_OK, or a negative sl_err once the
 * session failed (on_end fired; flush out, then close). */
int sl_crc_recv(sl_crc *c, const uint8_t *data, size_t len);
/* The socket ended (EOF or error): on_end fires if it has not. */
void sl_crc_eof(sl_crc *c);

/* Queues stdin bytes (copied). SL_ERR_STATE without stdin or after its
 * end, SL_ERR_CLOSED after the session ended, SL_ERR_NOMEM. */
int sl_crc_stdin(sl_crc *c, const uint8_t *data, size_t len);
/* Local stdin reached EOF: FIN (SPDY) or CLOSE (v5). Returns SL_OK, or
 * SL_ERR_UNSUPPORTED when the protocol cannot say it (WebSocket v4). */
int sl_crc_stdin_eof(sl_crc *c);
/* Stdin bytes accepted but not yet in out. */
size_t sl_crc_stdin_pending(const sl_crc *c);
/* Sends a terminal size. SL_ERR_STATE without tty or resize channel. */
int sl_crc_resize(sl_crc *c, uint16_t width, uint16_t height);
/* n bytes of channel ch delivered by on_output were written out. */
void sl_crc_consumed(sl_crc *c, int ch, size_t n);
/* SPDY PING or WebSocket ping. */
int sl_crc_ping(sl_crc *c);
/* Moves queued stream data into out while it is under high_water. */
int sl_crc_flush(sl_crc *c, size_t high_water);
/* We are done with the connection (after on_end): SPDY GOAWAY; a
 * WebSocket close (1000) unless one was already exchanged. */
void sl_crc_close(sl_crc *c);
/* True once on_end fired. */
bool sl_crc_ended(const sl_crc *c);

#endif
