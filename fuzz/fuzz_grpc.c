/* Fuzzes sluiced's gRPC receive path. The first byte picks the mode:
 *   even: the rest is a stream of Length-Prefixed-Messages, fed to the
 *         framing decoder in pieces; every complete message is unpacked as
 *         each request type of the CRI method table;
 *   odd:  the rest is raw HTTP/2 from a client (preface included), fed to
 *         a gRPC connection serving the CRI table's paths and request
 *         types (stub handlers), with deadlines expiring and the output
 *         drained. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cri/service.h"
#include "grpc/grpc_conn.h"
#include "grpc/grpc_frame.h"

#define FUZZ_MAX_MESSAGE 65536u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void unpack_all(const uint8_t *msg, size_t len)
{
    size_t n;
    const sl_grpc_method *m = sl_cri_methods(&n);
    for (size_t i = 0; i < n; i++) {
        if (!m[i].request)
            continue;
        ProtobufCMessage *p = protobuf_c_message_unpack(m[i].request, NULL, len, msg);
        if (p)
            protobuf_c_message_free_unpacked(p, NULL);
    }
}

/* Piece sizes come from the data itself so every split gets explored. */
static void framing(const uint8_t *data, size_t size)
{
    sl_grpc_decoder d;
    sl_grpc_decoder_init(&d, FUZZ_MAX_MESSAGE);
    size_t off = 0, piece = 1 + (size ? data[0] % 17 : 0);
    while (off < size) {
        size_t k = size - off < piece ? size - off : piece, used;
        int rc = sl_grpc_decoder_feed(&d, data + off, k, &used);
        off += used;
        if (rc < 0)
            break;
        if (rc == 1) {
            uint8_t *msg;
            size_t len;
            sl_grpc_decoder_take(&d, &msg, &len);
            unpack_all(msg, len);
            free(msg);
        }
        piece = piece % 31 + 1;
    }
    sl_grpc_decoder_fini(&d);
}

static uint64_t clock_ms;

static uint64_t fake_now(void *data)
{
    (void)data;
    return clock_ms;
}

/* The real handlers would create pods and start monitors; the connection
 * layer is what is fuzzed here, so every method answers at once: an empty
 * message or an error, alternately. */
static void stub_handler(sl_grpc_call *call, void *arg)
{
    unsigned *n = arg;
    Runtime__V1__VersionResponse resp = RUNTIME__V1__VERSION_RESPONSE__INIT;
    if ((*n)++ % 2)
        sl_grpc_call_fail(call, SL_GRPC_NOT_FOUND, "stub %u", *n);
    else
        sl_grpc_call_reply(call, &resp.base);
}

static void drain(sl_grpc_conn *c)
{
    sl_bufq out;
    sl_bufq_init(&out);
    sl_grpc_conn_send(c, &out, SIZE_MAX);
    sl_bufq_fini(&out);
}

/* The CRI table's paths and request types, with stub handlers. */
static const sl_grpc_config *stub_config(void)
{
    static sl_grpc_method table[64];
    static sl_grpc_config gc;
    static unsigned calls;
    if (gc.methods)
        return &gc;
    size_t n;
    const sl_grpc_method *m = sl_cri_methods(&n);
    if (n > sizeof(table) / sizeof(table[0]))
        n = sizeof(table) / sizeof(table[0]);
    for (size_t i = 0; i < n; i++) {
        table[i] = m[i];
        if (table[i].handler)
            table[i].handler = stub_handler;
    }
    sl_grpc_config_init(&gc);
    gc.methods = table;
    gc.nmethods = n;
    gc.arg = &calls;
    gc.max_recv_message = FUZZ_MAX_MESSAGE;
    return &gc;
}

static void connection(const uint8_t *data, size_t size)
{
    static const sl_grpc_conn_io io = {.now = fake_now};
    sl_grpc_conn *c;
    if (sl_grpc_conn_new(stub_config(), &io, &c) < 0)
        return;
    clock_ms = 1000;
    size_t off = 0;
    while (off < size) {
        size_t k = size - off < 97 ? size - off : 97;
        if (sl_grpc_conn_recv(c, data + off, k) < 0)
            break;
        off += k;
        drain(c);
        clock_ms += 50;
        sl_grpc_conn_expire(c, clock_ms);
    }
    drain(c);
    sl_grpc_conn_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        connection(data + 1, size - 1);
    else
        framing(data + 1, size - 1);
    return 0;
}
