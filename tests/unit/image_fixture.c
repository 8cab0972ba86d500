/* The image store's test images and fixture (image_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fsutil.h"
#include "image_fixture.h"

/* ---- the test images ---- */

static const tar_ent L1[] = {
    {.path = "bin/", .type = AE_IFDIR, .mode = 0755},
    {.path = "bin/app", .type = AE_IFREG, .mode = 0755, .data = "app v1"},
    {.path = "bin/link", .type = AE_IFLNK, .link = "app"},
    {.path = "bin/hard", .link = "bin/app"},
    {.path = "etc/file", .type = AE_IFREG, .data = "old"},
    {.path = "etc/gone", .type = AE_IFREG, .data = "x"},
    {.path = "var/cache/old", .type = AE_IFREG, .data = "o"},
};
static const tar_ent L2[] = {
    {.path = "etc/.wh.gone", .type = AE_IFREG},
    {.path = "var/cache/.wh..wh..opq", .type = AE_IFREG},
    {.path = "var/cache/new", .type = AE_IFREG, .data = "n"},
    {.path = "etc/file", .type = AE_IFREG, .data = "new"},
};

typedef struct layer_set {
    tar_buf t1, t2, b2; /* tars and layer 2's gzip blob */
} layer_set;

static void make_layers(const opts *o, layer_set *l, built *out)
{
    l->t1 = tar_make(L1, N(L1), 0);
    l->t2 = tar_make(o->l2 ? o->l2 : L2, o->l2 ? o->nl2 : N(L2), 0);
    l->b2 = tar_make(o->l2 ? o->l2 : L2, o->l2 ? o->nl2 : N(L2), 1);
    tar_sha256(l->t1.p, l->t1.len, out->d1);
    tar_sha256(l->t2.p, l->t2.len, out->d2);
}

static void free_layers(layer_set *l)
{
    free(l->t1.p);
    free(l->t2.p);
    free(l->b2.p);
}

static char *config_json(const opts *o, const char *cmd, const built *b)
{
    char *s;
    const char *d2 = o->wrong_diff_id ? "sha256:00000000000000000000000000000000000000000000000"
                                        "00000000000000000"
                                      : b->d2;
    assert_true(
        asprintf(&s,
                 "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Entrypoint\":"
                 "[\"/bin/app\"],\"Cmd\":[\"%s\"],\"Env\":[\"PATH=/bin\",\"A=b\"],"
                 "\"WorkingDir\":\"/work\",\"User\":\"1000:1000\",\"StopSignal\":"
                 "\"SIGINT\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\",\"%s\"]}}",
                 cmd, b->d1, d2) > 0);
    return s;
}

static member blob_member(const void *data, size_t len, char digest[SL_DIGEST_STR_LEN])
{
    member m;
    tar_sha256(data, len, digest);
    snprintf(m.name, sizeof(m.name), "blobs/sha256/%s", digest + 7);
    m.data = malloc(len ? len : 1);
    memcpy(m.data, data, len);
    m.len = len;
    return m;
}

static member str_member(const char *name, char *s)
{
    member m;
    snprintf(m.name, sizeof(m.name), "%s", name);
    m.data = (unsigned char *)s;
    m.len = strlen(s);
    return m;
}

/* Config and manifest blobs of one image; returns the index entry. */
static char *oci_image(const opts *o, const char *cmd, const built *b, const layer_set *l,
                       member *m, size_t *n, char id[SL_DIGEST_STR_LEN],
                       char man[SL_DIGEST_STR_LEN])
{
    char *cfg = config_json(o, cmd, b), *mj, *entry, ld2[SL_DIGEST_STR_LEN];
    m[*n] = blob_member(cfg, strlen(cfg), id);
    if (o->tamper_config)
        m[*n].data[m[*n].len - 3] = ' ';
    (*n)++;
    tar_sha256(l->b2.p, l->b2.len, ld2);
    assert_true(asprintf(&mj,
                         "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest."
                         "v1+json\",\"config\":{\"mediaType\":\"application/vnd.oci.image.config."
                         "v1+json\",\"digest\":\"%s\",\"size\":%zu},\"layers\":[{\"mediaType\":"
                         "\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"%s\",\"size\":%"
                         "zu},{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
                         "\"digest\":\"%s\",\"size\":%zu}]}",
                         id, strlen(cfg), b->d1, l->t1.len, ld2, l->b2.len) > 0);
    m[(*n)++] = blob_member(mj, strlen(mj), man);
    assert_true(asprintf(&entry,
                         "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                         "\"digest\":\"%s\",\"size\":%zu,\"annotations\":{%s%s%s}}",
                         man, strlen(mj), o->name ? "\"io.containerd.image.name\":\"" : "",
                         o->name ? o->name : "", o->name ? "\"" : "") > 0);
    free(cfg);
    free(mj);
    return entry;
}

void write_oci(const char *path, const opts *o, built *b)
{
    layer_set l;
    make_layers(o, &l, b);
    member m[12];
    size_t n = 0;
    char dig[SL_DIGEST_STR_LEN], man2[SL_DIGEST_STR_LEN];
    m[n++] = str_member("oci-layout", strdup("{\"imageLayoutVersion\":\"1.0.0\"}"));
    m[n++] = blob_member(l.t1.p, l.t1.len, dig);
    m[n++] = blob_member(l.b2.p, l.b2.len, dig);
    if (o->tamper_layer)
        m[n - 1].data[m[n - 1].len / 2] ^= 0x55;
    char *e1 = oci_image(o, o->cmd ? o->cmd : "one", b, &l, m, &n, b->id, b->manifest);
    char *e2 = o->second_image ? oci_image(o, "two", b, &l, m, &n, b->id2, man2) : NULL;
    if (o->alias)
        assert_true(asprintf(&e2,
                             "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                             "\"digest\":\"%s\",\"annotations\":{\"org.opencontainers.image.ref."
                             "name\":\"%s\"}}",
                             b->manifest, o->alias) > 0);
    char *index;
    assert_true(asprintf(&index, "{\"schemaVersion\":2,\"manifests\":[%s%s%s]}", e1, e2 ? "," : "",
                         e2 ? e2 : "") > 0);
    m[n++] = str_member("index.json", index);
    write_outer(path, m, n);
    for (size_t i = 0; i < n; i++)
        free(m[i].data);
    free(e1);
    free(e2);
    free_layers(&l);
}

void write_docker(const char *path, const opts *o, built *b)
{
    layer_set l;
    make_layers(o, &l, b);
    member m[6];
    size_t n = 0;
    char *cfg = config_json(o, o->cmd ? o->cmd : "docker", b);
    m[n] = blob_member(cfg, strlen(cfg), b->id);
    snprintf(m[n].name, sizeof(m[n].name), "%s.json", b->id + 7);
    if (o->tamper_config)
        m[n].data[m[n].len - 3] = ' ';
    n++;
    char dig[SL_DIGEST_STR_LEN];
    m[n] = blob_member(l.t1.p, l.t1.len, dig);
    strcpy(m[n++].name, "aaaa/layer.tar");
    m[n] = blob_member(l.b2.p, l.b2.len, dig);
    strcpy(m[n++].name, "bbbb/layer.tar");
    char *man;
    assert_true(asprintf(&man,
                         "[{\"Config\":\"%s.json\",\"RepoTags\":[\"%s\"],\"Layers\":"
                         "[\"aaaa/layer.tar\",\"./bbbb/layer.tar\"]}]",
                         b->id + 7, o->name ? o->name : "test:docker") > 0);
    m[n++] = str_member("manifest.json", man);
    write_outer(path, m, n);
    for (size_t i = 0; i < n; i++)
        free(m[i].data);
    free(cfg);
    free_layers(&l);
}

void write_outer(const char *path, const member *m, size_t n)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        tar_ent x = {.path = m[i].name, .type = AE_IFREG};
        tar_add_bytes(a, &x, m[i].data, m[i].len);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* ---- fixture ---- */

int fx_setup(void **state)
{
    fx *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    strcpy(f->root, "/tmp/sl-store-XXXXXX");
    strcpy(f->work, "/tmp/sl-work-XXXXXX");
    if (!mkdtemp(f->root) || !mkdtemp(f->work))
        return -1;
    sl_error e = {0};
    f->s = sl_image_store_open(f->root, NULL, &e);
    *state = f;
    return f->s ? 0 : -1;
}

int fx_teardown(void **state)
{
    fx *f = *state;
    sl_image_store_close(f->s);
    sl_rm_rf(f->root, NULL);
    sl_rm_rf(f->work, NULL);
    free(f);
    return 0;
}

bool image_tests_skipped(void)
{
    if (geteuid() == 0)
        return false;
    print_message("the image store needs root (chown, mknod, trusted xattrs): skipped\n");
    return true;
}

char *wpath(const fx *f, const char *name)
{
    static char p[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof(p[k]), "%s/%s", f->work, name);
    return p[k];
}

void import_ok(fx *f, const char *path, const char *extra, size_t want_ids)
{
    char **ids = NULL;
    sl_error e = {0};
    if (sl_image_store_import(f->s, path, extra, &ids, &e) != 0)
        fail_msg("import %s: %s", path, e.msg);
    size_t n = 0;
    while (ids[n])
        n++;
    assert_int_equal(n, want_ids);
    sl_image_ids_free(ids);
}

const sl_image *find_ok(fx *f, const char *ref)
{
    sl_error e = {0};
    const sl_image *img = sl_image_store_find(f->s, ref, &e);
    if (!img)
        fail_msg("find %s: %s", ref, e.msg);
    return img;
}

void assert_absent(fx *f, const char *ref)
{
    sl_error e = {0};
    assert_null(sl_image_store_find(f->s, ref, &e));
    assert_int_equal(e.errnum, ENOENT);
}

size_t count_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
    return tar_shell_count(cmd);
}

static void assert_file(const char *dir, const char *rel, const char *content)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    tar_assert_file(path, content);
}

char *snapshot(const fx *f)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd),
             "cd %s && find . -path ./lock -prune -o -printf '%%p %%s\\n' | sort; "
             "cat images.json 2>/dev/null",
             f->root);
    FILE *p = popen(cmd, "r");
    tar_buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        tar_buf_write(NULL, &b, chunk, n);
    pclose(p);
    tar_buf_write(NULL, &b, "", 1);
    return (char *)b.p;
}

void check_layers(const sl_image *img, const built *b)
{
    assert_int_equal(img->n_layers, 2);
    assert_string_equal(strrchr(img->layer_dirs[0], '/') + 1, b->d1 + 7);
    assert_string_equal(strrchr(img->layer_dirs[1], '/') + 1, b->d2 + 7);
    assert_null(img->layer_dirs[2]);
    const char *l1 = img->layer_dirs[0], *l2 = img->layer_dirs[1];
    assert_file(l1, "bin/app", "app v1");
    assert_file(l1, "bin/hard", "app v1");
    char path[512], target[16] = {0};
    snprintf(path, sizeof(path), "%s/bin/link", l1);
    assert_int_equal(readlink(path, target, sizeof(target) - 1), 3);
    struct stat st;
    snprintf(path, sizeof(path), "%s/etc/gone", l2);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
    snprintf(path, sizeof(path), "%s/var/cache", l2);
    char v[4] = {0};
    assert_int_equal(getxattr(path, "trusted.overlay.opaque", v, sizeof(v)), 1);
    assert_file(l2, "var/cache/new", "n");
    assert_file(l2, "etc/file", "new");
}
