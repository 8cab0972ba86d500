/* Private state of sl_spdy_session, shared by spdy_session.c (inbound)
 * and spdy_submit.c (outbound, flow control). Not for other layers. */
#ifndef SL_SPDY_SESSION_INT_H
#define SL_SPDY_SESSION_INT_H

#include "spdy/spdy_session.h"

/* Hash buckets of the stream table: a few inline (an exec session has at
 * most 5 streams), growing 4x while there are more than two streams per
 * bucket, up to the most. */
#define STREAM_BUCKETS_MIN 8u
#define STREAM_BUCKETS_MAX 256u

typedef struct sl_spdy_stream {
    uint32_t id;
    struct sl_spdy_stream *hnext; /* hash chain */
    struct sl_spdy_stream *qnext; /* round-robin send queue */
    bool queued;                  /* in the send queue */
    bool local;                   /* opened by us */
    bool replied;                 /* SYN_REPLY sent (peer's stream) / received (ours) */
    bool in_closed;               /* the peer's FIN arrived (or it cannot send) */
    bool fin_queued;              /* the application asked for FIN */
    bool out_closed;              /* our FIN is in out (or we cannot send) */
    sl_bufq oq;                   /* outbound payload not yet framed */
    int64_t send_window;          /* the peer's window for this stream */
    uint64_t unconsumed;          /* delivered to on_data, not yet consumed */
    uint64_t credit;              /* consumed, not yet returned by WINDOW_UPDATE */
} sl_spdy_stream;

/* What to do with the payload of the DATA frame being received. */
typedef enum data_mode { DATA_DROP, DATA_DELIVER } data_mode;

struct sl_spdy_session {
    sl_spdy_role role;
    sl_spdy_callbacks cb;
    void *arg;
    sl_bufq *out;
    sl_spdy_limits lim;
    sl_spdy_reader rd;
    sl_spdy_deflater def;
    sl_spdy_inflater inf;

    sl_spdy_stream **table; /* small, or an allocated one once grown */
    size_t nbuckets;        /* a power of two */
    sl_spdy_stream *small[STREAM_BUCKETS_MIN];
    size_t nstreams, nremote, nlocal;
    sl_spdy_stream *qhead, *qtail;
    size_t nqueued;

    uint32_t next_local_id;  /* next id we open */
    uint32_t next_remote_id; /* smallest id the peer may open next */
    uint32_t next_ping_id;

    /* flow control */
    int64_t peer_initial_window; /* SETTINGS INITIAL_WINDOW_SIZE, default 64 KiB */
    int64_t send_window;         /* the peer's session window (SPDY/3.1) */
    int64_t recv_window;         /* our stream windows: 64 KiB or the announced size */
    uint64_t session_credit;     /* received bytes not yet returned (session window) */
    bool peer_fc;                /* peer uses stream windows */
    bool peer_session_fc;        /* peer uses the session window */
    bool announced;              /* we sent SETTINGS INITIAL_WINDOW_SIZE */
    uint64_t grants;             /* times the peer widened a send window */
    bool peer_silent;            /* it replied to our stream with no sign of flow control */
    uint32_t peer_max_streams;   /* its MAX_CONCURRENT_STREAMS, or UINT32_MAX */
    size_t direct_limit;         /* stream_send frames into out below this; 0 = never */

    bool goaway_sent, goaway_recv;
    int dead; /* sticky fatal error, 0 while alive */

    uint32_t reset_ids[SL_SPDY_RESET_MEMORY];
    size_t reset_pos;

    /* the DATA frame being received */
    uint32_t data_id;
    uint8_t data_flags;
    data_mode data_mode;
};

/* spdy_session.c */
sl_spdy_stream *sl_spdy_stream_find(const sl_spdy_session *s, uint32_t id);
/* Allocates a stream (not yet in the table), or NULL on ENOMEM. */
sl_spdy_stream *sl_spdy_stream_new(const sl_spdy_session *s, uint32_t id, bool local);
/* Puts a stream from sl_spdy_stream_new into the table. */
void sl_spdy_stream_link(sl_spdy_session *s, sl_spdy_stream *st);
/* Unlinks and frees st, then fires on_reset(reset_status) if
 * reset_status != 0, then on_stream_close. */
void sl_spdy_stream_remove(sl_spdy_session *s, sl_spdy_stream *st, uint32_t reset_status);
/* Removes st if both directions are closed. Returns true if removed. */
bool sl_spdy_stream_maybe_done(sl_spdy_session *s, sl_spdy_stream *st);
/* Remembers an id we reset, so late DATA on it is dropped quietly. */
void sl_spdy_remember_reset(sl_spdy_session *s, uint32_t id);

/* spdy_submit.c */
/* n bytes arrived (delivered or dropped): session credit, returned at once
 * (WINDOW_UPDATE for stream 0 past the threshold) while credit is on. */
int sl_spdy_credit_session(sl_spdy_session *s, uint64_t n);
/* The application used n bytes of st: stream credit, returned past the
 * stream threshold while credit is on. */
int sl_spdy_credit_stream(sl_spdy_session *s, sl_spdy_stream *st, uint64_t n);
/* Removes st from the send queue if it is there. */
void sl_spdy_unqueue(sl_spdy_session *s, sl_spdy_stream *st);

#endif
