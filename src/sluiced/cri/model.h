/* sluiced's pods and containers in memory, mirrored on disk by
 * state/state.h records. The CRI configs are kept verbatim (protobuf-packed,
 * base64 in the record) so labels, annotations and metadata come back
 * exactly as the kubelet sent them, also after a restart. */
#ifndef SL_CRI_MODEL_H
#define SL_CRI_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cri/mon_client.h"
#include "grpc/api.pb-c.h"
#include "sys_error.h"

#define SL_ID_HEX 64 /* ids are 32 random bytes in hex, like containerd's */

/* Bytes of an exit message kept from status.json. */
#define SL_CTR_MESSAGE_MAX 1024

typedef struct sl_pod {
    struct sl_pod *next;
    char id[SL_ID_HEX + 1];
    json_t *rec;                           /* the on-disk record */
    Runtime__V1__PodSandboxConfig *config; /* unpacked from rec */
    bool ready;                            /* SANDBOX_READY */
    int64_t created_at;                    /* ns */
    sl_monc *mon;                          /* NULL while not connected */
    bool mon_dead;                         /* its monitor died (mon_death.c) */
    bool adopting;                         /* a new monitor is being started (mon_adopt.c) */
    uint64_t restart_window_ms;            /* start of the current restart-limit minute */
    uint32_t restarts;                     /* monitors started in it */
    void *owner;                           /* the sl_rt, for monitor events */
} sl_pod;

typedef struct sl_ctr {
    struct sl_ctr *next;
    char id[SL_ID_HEX + 1];
    char pod_id[SL_ID_HEX + 1];
    json_t *rec;
    Runtime__V1__ContainerConfig *config;
    int64_t created_at;
    /* CRI log bytes and records its monitor reported dropped (log_dropped
     * events since this sluiced started; 0 before the first) */
    int64_t log_dropped_seen[2];
    /* duplicates of its output fds from its monitor (`stdio`): the pipes'
     * read ends ([0] stdout, [1] stderr) or the tty master ([0]); -1. They
     * keep its output alive for a monitor that adopts it (mon_adopt.c). */
    int stdio_fds[2];
    bool stdio_asked; /* a `stdio` request is out */
} sl_ctr;

/* The live view of a container, from the monitor's status.json. */
typedef struct sl_ctr_status {
    int state; /* RUNTIME__V1__CONTAINER_STATE__* */
    int64_t pid, exit_code, started_at, finished_at;
    char reason[64];
    char message[SL_CTR_MESSAGE_MAX];
    int64_t log_dropped_bytes, log_dropped_records; /* CRI log records the monitor dropped */
} sl_ctr_status;

typedef struct sl_model {
    const char *state_dir;
    sl_pod *pods;
    sl_ctr *ctrs;
} sl_model;

/* Loads every record under state_dir. Records that cannot be read are
 * reported to *e but do not stop the others. Returns 0 or -1. */
int sl_model_load(sl_model *m, const char *state_dir, sl_error *e);
void sl_model_fini(sl_model *m);

/* A new random id. */
void sl_model_new_id(char out[SL_ID_HEX + 1]);

sl_pod *sl_model_pod(sl_model *m, const char *id);
sl_ctr *sl_model_ctr(sl_model *m, const char *id);

/* Creates the object with its record (the config is packed into it) and
 * saves it. rec gets the caller's extra fields. Returns the object or
 * NULL (*e). */
sl_pod *sl_model_add_pod(sl_model *m, const char *id, const Runtime__V1__PodSandboxConfig *cfg,
                         json_t *rec, sl_error *e);
sl_ctr *sl_model_add_ctr(sl_model *m, const char *id, const char *pod_id,
                         const Runtime__V1__ContainerConfig *cfg, json_t *rec, sl_error *e);
/* Saves the object's record after a change. Returns 0 or -1 (*e). */
int sl_model_save_pod(sl_model *m, sl_pod *p, sl_error *e);
/* Forgets the object and deletes its state directory. */
int sl_model_remove_pod(sl_model *m, sl_pod *p, sl_error *e);
int sl_model_remove_ctr(sl_model *m, sl_ctr *c, sl_error *e);

/* Reads the monitor's status.json of c (created when absent). */
void sl_model_ctr_status(const sl_model *m, const sl_ctr *c, sl_ctr_status *st);
/* Writes c's status.json as exited now, for a container whose monitor is
 * gone (the monitor writes it otherwise). Returns 0 or -1 (*e). */
int sl_model_ctr_set_exited(const sl_model *m, const sl_ctr *c, int exit_code, const char *reason,
                            const char *message, sl_error *e);

/* Record field helpers. */
const char *sl_rec_str(const json_t *rec, const char *key);
int64_t sl_rec_int(const json_t *rec, const char *key);
bool sl_rec_bool(const json_t *rec, const char *key);

/* Nanoseconds since the epoch (CLOCK_REALTIME). */
int64_t sl_now_ns(void);

#endif
