/* The streaming server's limits in one table: every numeric field of
 * sl_server_config an operator may tune, with the name of its sluiced
 * config key, its sluice-hostd flag, its default, its range and one line
 * of help. The programs build their option parsers, --help and the
 * monitor hand-off from it, and a unit test checks it against the struct
 * and docs/configuration.md, so a new field cannot be forgotten by one of
 * them.
 *
 * SL_SERVER_LIMITS(X) calls X(field, key, flag, arg, def, min, max, scope,
 * help)
 * once per limit:
 *   field  the sl_server_config member (uint32_t, or uint64_t when its
 *          sizeof is 8);
 *   key    sluiced's config key (also its --flag);
 *   flag   sluice-hostd's flag, without the dashes;
 *   arg    the value's placeholder in --help: "MS", "BYTES" or "N";
 *   def    the default (an SL_DEFAULT_* constant), min..max the values a
 *          program accepts;
 *   scope  SL_LIMIT_SERVER: read by sl_server_new for the listener and
 *          its own connections; SL_LIMIT_SESSION: also a per-connection
 *          limit of sl_server_adopt (a pod monitor gets it with each
 *          hand-off). */
#ifndef SLUICE_LIMITS_H
#define SLUICE_LIMITS_H

#include <stdint.h>
#include "sluice/server.h"

#define SL_LIMIT_SERVER 0
#define SL_LIMIT_SESSION 1

/* clang-format off */
#define SL_SERVER_LIMITS(X)                                                                        \
    X(token_ttl_ms, "token-ttl-ms", "token-ttl-ms", "MS", SL_DEFAULT_TOKEN_TTL_MS, 1, UINT32_MAX,  \
      SL_LIMIT_SERVER, "a streaming URL must be used within this")                            \
    X(max_pending_tokens, "max-pending-tokens", "max-pending-tokens", "N",                         \
      SL_DEFAULT_MAX_PENDING_TOKENS, 1, UINT32_MAX, SL_LIMIT_SERVER,                               \
      "unused streaming URLs at most (then RESOURCE_EXHAUSTED)")                                   \
    X(idle_timeout_ms, "idle-timeout-ms", "idle-timeout-ms", "MS", SL_DEFAULT_IDLE_TIMEOUT_MS, 1,  \
      UINT64_MAX, SL_LIMIT_SESSION, "a streaming session without data for this long ends")    \
    X(creation_timeout_ms, "creation-timeout-ms", "creation-timeout-ms", "MS",                     \
      SL_DEFAULT_CREATION_TIMEOUT_MS, 1, UINT32_MAX, SL_LIMIT_SESSION,                             \
      "SPDY: every stream of a session must exist within this")                               \
    X(head_timeout_ms, "head-timeout-ms", "head-timeout-ms", "MS", SL_DEFAULT_HEAD_TIMEOUT_MS, 1,  \
      UINT32_MAX, SL_LIMIT_SERVER, "the streaming request head must arrive within this")      \
    X(max_request_line, "max-request-line", "max-request-line", "BYTES",                           \
      SL_DEFAULT_MAX_REQUEST_LINE, 16, UINT32_MAX, SL_LIMIT_SESSION,                               \
      "bytes of the streaming request line")                                                       \
    X(max_headers, "max-headers", "max-headers", "N", SL_DEFAULT_MAX_HEADERS, 1, UINT32_MAX,       \
      SL_LIMIT_SESSION, "header fields of a streaming request")                                    \
    X(max_head_size, "max-head-size", "max-head-size", "BYTES", SL_DEFAULT_MAX_HEAD_SIZE, 64,      \
      UINT32_MAX, SL_LIMIT_SESSION, "bytes of the whole streaming request head")                   \
    X(max_ws_message, "max-ws-message", "max-ws-message", "BYTES", SL_DEFAULT_MAX_WS_MESSAGE, 1,   \
      UINT32_MAX, SL_LIMIT_SESSION, "bytes of one reassembled WebSocket message")                  \
    X(max_sessions, "max-sessions", "max-sessions", "N", SL_DEFAULT_MAX_SESSIONS, 1, UINT32_MAX,   \
      SL_LIMIT_SERVER, "concurrent streaming sessions")                                            \
    X(output_high_water, "output-high-water", "output-high-water", "BYTES",                        \
      SL_DEFAULT_OUTPUT_HIGH_WATER, 1, UINT32_MAX, SL_LIMIT_SESSION,                               \
      "output bytes queued per connection before the process is no longer read")                   \
    X(keepalive_idle_ms, "keepalive-idle-ms", "keepalive-idle-ms", "MS",                           \
      SL_DEFAULT_KEEPALIVE_IDLE_MS, 0, UINT32_MAX, SL_LIMIT_SERVER,                                \
      "TCP keepalive on streaming connections after this silence, 0 = off")                   \
    X(keepalive_interval_ms, "keepalive-interval-ms", "keepalive-interval-ms", "MS",               \
      SL_DEFAULT_KEEPALIVE_INTERVAL_MS, 1, UINT32_MAX, SL_LIMIT_SERVER,                            \
      "between unanswered keepalive probes")                                                  \
    X(keepalive_count, "keepalive-count", "keepalive-count", "N", SL_DEFAULT_KEEPALIVE_COUNT, 1,   \
      127, SL_LIMIT_SERVER, "unanswered keepalive probes that end a streaming connection")         \
    X(max_connections, "max-stream-connections", "max-connections", "N",                           \
      SL_DEFAULT_MAX_CONNECTIONS, 1, UINT32_MAX, SL_LIMIT_SERVER,                                  \
      "open streaming connections; beyond, 503")                                                   \
    X(tty_size_wait_ms, "tty-size-wait-ms", "tty-size-wait-ms", "MS",                              \
      SL_DEFAULT_TTY_SIZE_WAIT_MS, 0, 60000, SL_LIMIT_SESSION,                                     \
      "a tty exec/attach waits this long for the client's terminal size, 0 = not")            \
    X(listen_backlog, "stream-listen-backlog", "listen-backlog", "N", SL_DEFAULT_LISTEN_BACKLOG,   \
      1, 65535, SL_LIMIT_SERVER, "streaming connections the kernel queues before accept")          \
    X(spdy_initial_window, "spdy-initial-window", "spdy-initial-window", "BYTES",                  \
      SL_DEFAULT_SPDY_INITIAL_WINDOW, SL_SPDY_MIN_INITIAL_WINDOW, SL_SPDY_MAX_INITIAL_WINDOW,      \
      SL_LIMIT_SESSION, "bytes of our SPDY stream window (announced in SETTINGS)")                 \
    X(spdy_max_streams, "spdy-max-streams", "spdy-max-streams", "N", SL_DEFAULT_SPDY_MAX_STREAMS,  \
      1, UINT32_MAX, SL_LIMIT_SESSION, "SPDY streams a client may have open at once")              \
    X(spdy_max_header_block, "spdy-max-header-block", "spdy-max-header-block", "BYTES",            \
      SL_DEFAULT_SPDY_MAX_HEADER_BLOCK, 1024, UINT32_MAX, SL_LIMIT_SESSION,                        \
      "bytes of a decompressed SPDY header block")                                                 \
    X(spdy_max_header_pairs, "spdy-max-header-pairs", "spdy-max-header-pairs", "N",                \
      SL_DEFAULT_SPDY_MAX_HEADER_PAIRS, 1, UINT32_MAX, SL_LIMIT_SESSION,                           \
      "name/value pairs of one SPDY header block")                                                 \
    X(spdy_max_control_frame, "spdy-max-control-frame", "spdy-max-control-frame", "BYTES",         \
      SL_DEFAULT_SPDY_MAX_CONTROL_FRAME, 1024, SL_SPDY_MAX_FRAME, SL_LIMIT_SESSION,                \
      "payload bytes of a SPDY control frame")                                                     \
    X(spdy_max_data_frame, "spdy-max-data-frame", "spdy-max-data-frame", "BYTES",                  \
      SL_DEFAULT_SPDY_MAX_DATA_FRAME, 1024, SL_SPDY_MAX_FRAME, SL_LIMIT_SESSION,                   \
      "payload bytes of a SPDY DATA frame")
/* clang-format on */

#endif
