/* The "update" request: a container's new resources (OCI linux.resources,
 * from sluiced) written to a file in its run dir and applied with
 * `runc update --resources`; a new oom_score_adj is written to the init
 * process, which runc update does not touch. One update per container at
 * a time. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_host.h"
#include "mon.h"
#include "sluice/error.h"

#define UPDATE_FILE "update.json"

static int write_oom_score_adj(pid_t pid, int value, char *err, size_t len)
{
    char path[64], text[16];
    snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
    int n = snprintf(text, sizeof(text), "%d", value);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, (size_t)n) != n) {
        snprintf(err, len, "oom_score_adj %d: %s", value, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

static void update_done(mon *m, int status, const char *err, void *data)
{
    mon_ctr *c = data;
    mon_req *r = c->update_req;
    c->update_job = NULL;
    c->update_req = NULL;
    char why[SL_MON_ERR_TEXT];
    if (c->reaped) { /* exited meanwhile: nothing to apply any more */
        mon_reply(m, r, json_pack("{s:b}", "applied", 0), NULL, NULL, 0);
        return;
    }
    if (status != 0) {
        mon_reply_err(m, r, "runc update %s: %s", c->id, *err ? err : "failed");
        return;
    }
    if (c->update_oom && write_oom_score_adj(c->pid, c->update_oom_value, why, sizeof(why)) < 0) {
        mon_reply_err(m, r, "container %s: %s", c->id, why);
        return;
    }
    mon_log(MON_INFO, "container %s: resources updated", c->id);
    mon_reply(m, r, json_pack("{s:b}", "applied", 1), NULL, NULL, 0);
}

/* Checks the request; *why says what is wrong. */
static mon_ctr *update_parse(mon *m, const json_t *msg, int64_t *oom, const char **why)
{
    mon_ctr *c = mon_ctr_find(m, sl_mon_str(msg, "container_id"));
    if (!c)
        return *why = "no such container", NULL;
    if (!json_is_object(json_object_get(msg, "resources")))
        return *why = "resources must be an object", NULL;
    if (sl_mon_int(msg, "oom_score_adj", SL_CG_OOM_MIN, SL_CG_OOM_MAX, 0, oom) != SL_OK)
        return *why = "oom_score_adj must be -1000..1000", NULL;
    if (c->state == CTR_CREATING)
        return *why = "the container is being created", NULL;
    if (c->job) /* runc start or delete: both rewrite runc's state file, as update does */
        return *why = "the container is being started or deleted", NULL;
    if (c->update_job)
        return *why = "another update of this container is in progress", NULL;
    return c;
}

static int write_update_file(mon_ctr *c, const json_t *res, char **path, sl_error *e)
{
    *path = sl_path_join(c->dir, UPDATE_FILE);
    char *text = json_dumps(res, JSON_COMPACT);
    int rc = *path && text ? sl_write_file_atomic(*path, text, strlen(text), 0600, e)
                           : sl_error_set(e, ENOMEM, "update");
    free(text);
    return rc;
}

void mon_ctr_update(mon *m, mon_req *r, const json_t *msg)
{
    int64_t oom;
    const char *why = NULL;
    mon_ctr *c = update_parse(m, msg, &oom, &why);
    if (!c) {
        mon_reply_err(m, r, "%s", why);
        return;
    }
    if (c->reaped || c->finalized) {
        mon_reply(m, r, json_pack("{s:b}", "applied", 0), NULL, NULL, 0);
        return;
    }
    sl_error e;
    SL_AUTOFREE char *path = NULL;
    if (write_update_file(c, json_object_get(msg, "resources"), &path, &e) == 0) {
        const char *args[] = {"update", "--resources", path, c->id, NULL};
        c->update_job = mon_runc(m, args, NULL, update_done, c, &e);
    }
    if (!c->update_job) {
        mon_reply_err(m, r, "update %s: %s", c->id, e.msg);
        return;
    }
    c->update_req = r;
    c->update_oom = json_object_get(msg, "oom_score_adj") != NULL;
    c->update_oom_value = (int)oom;
}

void mon_ctr_update_abort(mon_ctr *c)
{
    mon_job_cancel(c->update_job);
    c->update_job = NULL;
    if (c->update_req)
        mon_reply_err(c->m, c->update_req, "container removed");
    c->update_req = NULL;
}
