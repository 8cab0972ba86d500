/* ImageService on the local image store. PullImage reaches no registry:
 * it finds the image locally, after importing whatever tarballs wait in
 * the import directory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/cri_util.h"
#include "sl_log.h"
#include "cri/image_jobs.h"

/* Bytes of the failed imports quoted in a PullImage answer. */
#define SL_IMAGE_FAILURES_MAX 2048

/* An Image message and the uid it points to. */
typedef struct image_msg {
    Runtime__V1__Image img;
    Runtime__V1__Int64Value uid;
    char username[256]; /* longer names are cut (the image's config holds them) */
} image_msg;

/* The image config's USER as the CRI reports it (containerd's rule): the
 * part before ':' is a uid when numeric, else a user name. */
static void fill_user(image_msg *m, const char *user)
{
    if (!user || !*user)
        return;
    size_t n = strcspn(user, ":");
    char *end;
    errno = 0;
    long long v = strtoll(user, &end, 10);
    if (n > 0 && end == user + n && errno == 0 && v >= 0) {
        runtime__v1__int64_value__init(&m->uid);
        m->uid.value = v;
        m->img.uid = &m->uid;
        return;
    }
    snprintf(m->username, sizeof(m->username), "%.*s", (int)n, user);
    m->img.username = m->username;
}

/* Fills an Image message from a store view (strings borrowed). */
static void fill_image(image_msg *m, const sl_image *img)
{
    Runtime__V1__Image *out = &m->img;
    runtime__v1__image__init(out);
    out->id = (char *)img->id;
    out->n_repo_tags = img->n_repo_tags;
    out->repo_tags = (char **)img->repo_tags;
    out->n_repo_digests = img->n_repo_digests;
    out->repo_digests = (char **)img->repo_digests;
    out->size = img->size;
    fill_user(m, img->config.user);
}

static const char *spec_image(const Runtime__V1__ImageSpec *s)
{
    return s && s->image ? s->image : "";
}

void sl_cri_list_images(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__ListImagesRequest *req = (const void *)sl_grpc_call_request(call);
    const char *filter = req->filter ? spec_image(req->filter->image) : "";
    const sl_image **imgs = NULL;
    size_t n = 0;
    sl_error e;
    if (sl_image_store_list(rt->images, filter, &imgs, &n, &e) < 0) {
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    image_msg *items = calloc(n ? n : 1, sizeof(*items));
    Runtime__V1__Image **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    if (!items || !ptrs) {
        free(items);
        free(ptrs);
        free(imgs);
        sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        fill_image(&items[i], imgs[i]);
        ptrs[i] = &items[i].img;
    }
    Runtime__V1__ListImagesResponse resp = RUNTIME__V1__LIST_IMAGES_RESPONSE__INIT;
    resp.n_images = n;
    resp.images = ptrs;
    sl_grpc_call_reply(call, &resp.base);
    free(items);
    free(ptrs);
    free(imgs);
}

void sl_cri_image_status(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__ImageStatusRequest *req = (const void *)sl_grpc_call_request(call);
    sl_error e;
    const char *ref = spec_image(req->image);
    const sl_image *img = sl_image_store_find(rt->images, ref, &e);
    char *progress = !img && req->verbose ? sl_imgq_progress_json(rt->imgq, ref) : NULL;
    if (!img && !progress && sl_imgq_may_give(rt->imgq, ref, true)) { /* e.g. at start */
        sl_imgq_retry(rt->imgq, sl_cri_image_status, call, arg);
        return;
    }
    image_msg out;
    Runtime__V1__ImageStatusResponse resp = RUNTIME__V1__IMAGE_STATUS_RESPONSE__INIT;
    if (img) { /* an absent image is an empty answer, not an error */
        fill_image(&out, img);
        resp.image = &out.img;
    }
    /* verbose, while an import that may give it runs: answered at once,
     * without image, with how far the import is (sluicectl image import
     * shows it) */
    Runtime__V1__ImageStatusResponse__InfoEntry entry =
        RUNTIME__V1__IMAGE_STATUS_RESPONSE__INFO_ENTRY__INIT;
    Runtime__V1__ImageStatusResponse__InfoEntry *entries[] = {&entry};
    if (progress) {
        entry.key = "importProgress";
        entry.value = progress;
        resp.n_info = 1;
        resp.info = entries;
    }
    sl_grpc_call_reply(call, &resp.base);
    free(progress);
}

/* NOT_FOUND (or INVALID_ARGUMENT for a bad reference) for an image the
 * store lacks, with what failed imports said (their real cause). */
static void pull_fail(sl_grpc_call *call, sl_rt *rt, const char *ref, const sl_error *e)
{
    char failed[SL_IMAGE_FAILURES_MAX];
    sl_imgq_failures(rt->imgq, failed, sizeof(failed));
    sl_grpc_call_fail(call, e->errnum == ENOENT ? SL_GRPC_NOT_FOUND : SL_GRPC_INVALID_ARGUMENT,
                      "image \"%s\" is not in the local store and sluice pulls from no "
                      "registry: import it with `sluicectl image import FILE.tar`, or put the "
                      "OCI or docker-archive tarball into %s%s%s",
                      ref, rt->cfg->import_dir ? rt->cfg->import_dir : "the import directory",
                      failed[0] ? "; imports that failed: " : "", failed);
}

static void pull_reply(sl_grpc_call *call, const sl_image *img)
{
    Runtime__V1__PullImageResponse resp = RUNTIME__V1__PULL_IMAGE_RESPONSE__INIT;
    resp.image_ref = (char *)img->id;
    sl_grpc_call_reply(call, &resp.base);
}

/* PullImage again once the imports it waited for have ended. */
static void pull_after_imports(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__PullImageRequest *req = (const void *)sl_grpc_call_request(call);
    const char *ref = spec_image(req->image);
    sl_error e;
    const sl_image *img = sl_image_store_find(rt->images, ref, &e);
    if (img)
        pull_reply(call, img);
    else
        pull_fail(call, rt, ref, &e);
}

/* Finds the image; when absent, queues the tarballs of the import
 * directory that may give it and answers once their imports ended (on a
 * worker thread: other calls are served meanwhile). */
void sl_cri_pull_image(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__PullImageRequest *req = (const void *)sl_grpc_call_request(call);
    const char *ref = spec_image(req->image);
    sl_error e;
    const sl_image *img = sl_image_store_find(rt->images, ref, &e);
    if (img) {
        pull_reply(call, img);
        return;
    }
    if (e.errnum == ENOENT && rt->cfg->import_dir) {
        sl_error se;
        if (sl_imgq_scan(rt->imgq, rt->cfg->import_dir, ref, &se) < 0)
            sl_log(SL_LOG_WARN, "import directory not read", "error", se.msg, NULL);
        if (sl_imgq_may_give(rt->imgq, ref, true)) {
            sl_imgq_retry(rt->imgq, pull_after_imports, call, arg);
            return;
        }
    }
    pull_fail(call, rt, ref, &e);
}

void sl_cri_remove_image(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    const Runtime__V1__RemoveImageRequest *req = (const void *)sl_grpc_call_request(call);
    sl_error e;
    if (sl_image_store_remove(rt->images, spec_image(req->image), &e) < 0) {
        sl_grpc_call_fail(call, e.errnum == EINVAL ? SL_GRPC_INVALID_ARGUMENT : SL_GRPC_INTERNAL,
                          "%s", e.msg);
        return;
    }
    sl_imgq_collect(rt->imgq); /* its layers are deleted on a worker thread */
    Runtime__V1__RemoveImageResponse resp = RUNTIME__V1__REMOVE_IMAGE_RESPONSE__INIT;
    sl_grpc_call_reply(call, &resp.base);
}

void sl_cri_image_fs_info(sl_grpc_call *call, void *arg)
{
    sl_rt *rt = cri_rt(arg);
    sl_image_fs_usage u;
    sl_error e;
    if (sl_image_store_fs_usage(rt->images, &u, &e) < 0) {
        sl_grpc_call_fail_error(call, &e);
        return;
    }
    Runtime__V1__FilesystemIdentifier fsid = RUNTIME__V1__FILESYSTEM_IDENTIFIER__INIT;
    fsid.mountpoint = (char *)u.mountpoint;
    Runtime__V1__UInt64Value used = RUNTIME__V1__UINT64_VALUE__INIT;
    used.value = u.used_bytes;
    Runtime__V1__UInt64Value inodes = RUNTIME__V1__UINT64_VALUE__INIT;
    inodes.value = u.inodes_used;
    Runtime__V1__FilesystemUsage fs = RUNTIME__V1__FILESYSTEM_USAGE__INIT;
    fs.timestamp = sl_now_ns();
    fs.fs_id = &fsid;
    fs.used_bytes = &used;
    fs.inodes_used = &inodes;
    Runtime__V1__FilesystemUsage *list[] = {&fs};
    Runtime__V1__ImageFsInfoResponse resp = RUNTIME__V1__IMAGE_FS_INFO_RESPONSE__INIT;
    resp.n_image_filesystems = 1;
    resp.image_filesystems = list;
    sl_grpc_call_reply(call, &resp.base);
}
