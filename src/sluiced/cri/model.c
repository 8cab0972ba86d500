#include "cri/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "util/base64.h"
#include "state/state.h"

#define KIND_PODS "pods"
#define KIND_CTRS "containers"
#define STATUS_FILE "status.json"
#define STATUS_MAX 65536

int64_t sl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sl_model_new_id(char out[SL_ID_HEX + 1])
{
    uint8_t b[SL_ID_HEX / 2];
    size_t got = 0;
    while (got < sizeof(b)) {
        ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
        if (n > 0)
            got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(b); i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

const char *sl_rec_str(const json_t *rec, const char *key)
{
    const char *s = json_string_value(json_object_get(rec, key));
    return s ? s : "";
}

int64_t sl_rec_int(const json_t *rec, const char *key)
{
    return json_integer_value(json_object_get(rec, key));
}

bool sl_rec_bool(const json_t *rec, const char *key)
{
    return json_is_true(json_object_get(rec, key));
}

/* ---- configs packed into records ---- */

static int pack_into(json_t *rec, const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(n ? n : 1);
    char *b64 = malloc(sl_base64_encoded_len(n, 0) + 1);
    if (!buf || !b64) {
        free(buf);
        free(b64);
        return -1;
    }
    protobuf_c_message_pack(msg, buf);
    sl_base64_encode(b64, buf, n, 0);
    json_object_set_new(rec, "config", json_string(b64));
    free(buf);
    free(b64);
    return 0;
}

static ProtobufCMessage *unpack_from(const json_t *rec, const ProtobufCMessageDescriptor *d)
{
    const char *b64 = sl_rec_str(rec, "config");
    size_t len = strlen(b64);
    uint8_t *buf = malloc(len / 4 * 3 + 1);
    long n = buf ? sl_base64_decode(buf, b64, len) : -1;
    ProtobufCMessage *msg = n >= 0 ? protobuf_c_message_unpack(d, NULL, (size_t)n, buf) : NULL;
    free(buf);
    return msg;
}

/* ---- lookup ---- */

sl_pod *sl_model_pod(sl_model *m, const char *id)
{
    for (sl_pod *p = m->pods; p; p = p->next)
        if (!strcmp(p->id, id))
            return p;
    return NULL;
}

sl_ctr *sl_model_ctr(sl_model *m, const char *id)
{
    for (sl_ctr *c = m->ctrs; c; c = c->next)
        if (!strcmp(c->id, id))
            return c;
    return NULL;
}

/* ---- load ---- */

static sl_pod *pod_from(const char *id, json_t *rec)
{
    sl_pod *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    snprintf(p->id, sizeof(p->id), "%s", id);
    p->rec = rec;
    p->config = (Runtime__V1__PodSandboxConfig *)unpack_from(
        rec, &runtime__v1__pod_sandbox_config__descriptor);
    p->ready = sl_rec_bool(rec, "ready");
    p->created_at = sl_rec_int(rec, "created_at");
    if (!p->config) {
        free(p);
        return NULL;
    }
    return p;
}

static sl_ctr *ctr_from(const char *id, json_t *rec)
{
    sl_ctr *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    snprintf(c->id, sizeof(c->id), "%s", id);
    c->stdio_fds[0] = c->stdio_fds[1] = -1;
    snprintf(c->pod_id, sizeof(c->pod_id), "%s", sl_rec_str(rec, "pod_id"));
    c->rec = rec;
    c->config = (Runtime__V1__ContainerConfig *)unpack_from(
        rec, &runtime__v1__container_config__descriptor);
    c->created_at = sl_rec_int(rec, "created_at");
    if (!c->config) {
        free(c);
        return NULL;
    }
    return c;
}

static int load_kind(sl_model *m, const char *kind, sl_error *e)
{
    char **ids;
    size_t n;
    if (sl_state_list(m->state_dir, kind, &ids, &n, e) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        sl_error one;
        json_t *rec = sl_state_load(m->state_dir, kind, ids[i], &one);
        bool pods = !strcmp(kind, KIND_PODS);
        void *obj = !rec   ? NULL
                    : pods ? (void *)pod_from(ids[i], rec)
                           : (void *)ctr_from(ids[i], rec);
        if (!obj) {
            json_decref(rec);
            rc = sl_error_set(e, 0, "%s %s: %s", kind, ids[i], rec ? "bad config" : one.msg);
            continue;
        }
        if (pods) {
            ((sl_pod *)obj)->next = m->pods;
            m->pods = obj;
        } else {
            ((sl_ctr *)obj)->next = m->ctrs;
            m->ctrs = obj;
        }
    }
    sl_state_ids_free(ids, n);
    return rc;
}

int sl_model_load(sl_model *m, const char *state_dir, sl_error *e)
{
    m->state_dir = state_dir;
    m->pods = NULL;
    m->ctrs = NULL;
    int a = load_kind(m, KIND_PODS, e);
    int b = load_kind(m, KIND_CTRS, e);
    return a < 0 || b < 0 ? -1 : 0;
}

static void free_pod(sl_pod *p)
{
    sl_monc_close(p->mon);
    json_decref(p->rec);
    protobuf_c_message_free_unpacked(&p->config->base, NULL);
    free(p);
}

static void free_ctr(sl_ctr *c)
{
    for (int i = 0; i < 2; i++)
        if (c->stdio_fds[i] >= 0)
            close(c->stdio_fds[i]);
    json_decref(c->rec);
    protobuf_c_message_free_unpacked(&c->config->base, NULL);
    free(c);
}

void sl_model_fini(sl_model *m)
{
    while (m->pods) {
        sl_pod *p = m->pods;
        m->pods = p->next;
        free_pod(p);
    }
    while (m->ctrs) {
        sl_ctr *c = m->ctrs;
        m->ctrs = c->next;
        free_ctr(c);
    }
}

/* ---- changes ---- */

sl_pod *sl_model_add_pod(sl_model *m, const char *id, const Runtime__V1__PodSandboxConfig *cfg,
                         json_t *rec, sl_error *e)
{
    if (pack_into(rec, &cfg->base) < 0) {
        sl_error_set(e, ENOMEM, "pod record");
        return NULL;
    }
    if (sl_state_save(m->state_dir, KIND_PODS, id, rec, e) < 0)
        return NULL;
    sl_pod *p = pod_from(id, json_incref(rec));
    if (!p) {
        json_decref(rec);
        sl_error_set(e, ENOMEM, "pod");
        return NULL;
    }
    p->next = m->pods;
    m->pods = p;
    return p;
}

sl_ctr *sl_model_add_ctr(sl_model *m, const char *id, const char *pod_id,
                         const Runtime__V1__ContainerConfig *cfg, json_t *rec, sl_error *e)
{
    json_object_set_new(rec, "pod_id", json_string(pod_id));
    if (pack_into(rec, &cfg->base) < 0) {
        sl_error_set(e, ENOMEM, "container record");
        return NULL;
    }
    if (sl_state_save(m->state_dir, KIND_CTRS, id, rec, e) < 0)
        return NULL;
    sl_ctr *c = ctr_from(id, json_incref(rec));
    if (!c) {
        json_decref(rec);
        sl_error_set(e, ENOMEM, "container");
        return NULL;
    }
    c->next = m->ctrs;
    m->ctrs = c;
    return c;
}

int sl_model_save_pod(sl_model *m, sl_pod *p, sl_error *e)
{
    json_object_set_new(p->rec, "ready", json_boolean(p->ready));
    return sl_state_save(m->state_dir, KIND_PODS, p->id, p->rec, e);
}

int sl_model_remove_pod(sl_model *m, sl_pod *p, sl_error *e)
{
    for (sl_pod **pp = &m->pods; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    int rc = sl_state_remove(m->state_dir, KIND_PODS, p->id, e);
    free_pod(p);
    return rc;
}

int sl_model_remove_ctr(sl_model *m, sl_ctr *c, sl_error *e)
{
    for (sl_ctr **pp = &m->ctrs; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    int rc = sl_state_remove(m->state_dir, KIND_CTRS, c->id, e);
    free_ctr(c);
    return rc;
}

void sl_model_ctr_status(const sl_model *m, const sl_ctr *c, sl_ctr_status *st)
{
    memset(st, 0, sizeof(*st));
    st->state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED;
    SL_AUTOFREE char *dir = sl_state_dir(m->state_dir, KIND_CTRS, c->id);
    SL_AUTOFREE char *path = dir ? sl_path_join(dir, STATUS_FILE) : NULL;
    SL_AUTOFREE char *text = NULL;
    sl_error e;
    if (!path || sl_read_file(path, STATUS_MAX, &text, NULL, &e) < 0)
        return;
    json_t *j = json_loads(text, 0, NULL);
    const char *state = sl_rec_str(j, "state");
    if (!strcmp(state, "running"))
        st->state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
    else if (!strcmp(state, "exited"))
        st->state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
    st->pid = sl_rec_int(j, "pid");
    st->exit_code = sl_rec_int(j, "exit_code");
    st->started_at = sl_rec_int(j, "started_at");
    st->finished_at = sl_rec_int(j, "finished_at");
    snprintf(st->reason, sizeof(st->reason), "%s", sl_rec_str(j, "reason"));
    snprintf(st->message, sizeof(st->message), "%s", sl_rec_str(j, "message"));
    st->log_dropped_bytes = sl_rec_int(j, "log_dropped_bytes");
    st->log_dropped_records = sl_rec_int(j, "log_dropped_records");
    json_decref(j);
}

int sl_model_ctr_set_exited(const sl_model *m, const sl_ctr *c, int exit_code, const char *reason,
                            const char *message, sl_error *e)
{
    SL_AUTOFREE char *dir = sl_state_dir(m->state_dir, KIND_CTRS, c->id);
    SL_AUTOFREE char *path = dir ? sl_path_join(dir, STATUS_FILE) : NULL;
    SL_AUTOFREE char *text = NULL;
    if (!path)
        return sl_error_set(e, ENOMEM, "container %s status", c->id);
    sl_error ignored;
    json_t *j = sl_read_file(path, STATUS_MAX, &text, NULL, &ignored) == 0
                    ? json_loads(text, 0, NULL)
                    : NULL;
    if (!j)
        j = json_object();
    if (!j || json_object_set_new(j, "state", json_string("exited")) < 0 ||
        json_object_set_new(j, "exit_code", json_integer(exit_code)) < 0 ||
        json_object_set_new(j, "finished_at", json_integer(sl_now_ns())) < 0 ||
        json_object_set_new(j, "reason", json_string(reason)) < 0 ||
        json_object_set_new(j, "message", json_string(message)) < 0) {
        json_decref(j);
        return sl_error_set(e, ENOMEM, "container %s status", c->id);
    }
    SL_AUTOFREE char *out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!out)
        return sl_error_set(e, ENOMEM, "container %s status", c->id);
    return sl_write_file_atomic(path, out, strlen(out), 0644, e);
}
