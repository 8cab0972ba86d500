#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fsutil.h"
#include "image/image_ref.h"
#include "image/image_store.h"

/* ---- tar writing (libarchive) ---- */

typedef struct buf {
    unsigned char *p;
    size_t len, cap;
} buf;

static la_ssize_t buf_write(struct archive *a, void *arg, const void *data, size_t n)
{
    (void)a;
    buf *b = arg;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return (la_ssize_t)n;
}

typedef struct ent {
    const char *path;
    unsigned type; /* AE_IF*; 0 with link: a hard link */
    unsigned mode;
    const char *data;
    const char *link;
} ent;

static void add_entry(struct archive *a, const ent *x, size_t size)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, x->path);
    archive_entry_set_filetype(e, x->type ? x->type : AE_IFREG);
    if (!x->type && x->link)
        archive_entry_set_hardlink(e, x->link);
    if (x->type == AE_IFLNK)
        archive_entry_set_symlink(e, x->link);
    archive_entry_set_perm(e, x->mode ? x->mode : 0644);
    archive_entry_set_mtime(e, 1700000000, 0);
    archive_entry_set_size(e, size);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    if (size)
        assert_int_equal(archive_write_data(a, x->data, size), (la_ssize_t)size);
    archive_entry_free(e);
}

static buf make_tar(const ent *ents, size_t n, int gzip)
{
    buf b = {0};
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (gzip)
        archive_write_add_filter_gzip(a);
    archive_write_set_bytes_in_last_block(a, 1);
    assert_int_equal(archive_write_open(a, &b, NULL, buf_write, NULL), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++)
        add_entry(a, &ents[i],
                  !ents[i].type && ents[i].link ? 0
                  : ents[i].data                ? strlen(ents[i].data)
                                                : 0);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    return b;
}

static void digest_of(const void *p, size_t n, char out[SL_DIGEST_STR_LEN])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen;
    EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL);
    sl_digest_format(md, out);
}

/* Members of the outer tarball, written to a file. */
typedef struct member {
    char name[160];
    unsigned char *data;
    size_t len;
} member;

static void write_outer(const char *path, const member *m, size_t n)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        ent x = {.path = m[i].name, .type = AE_IFREG, .data = (const char *)m[i].data};
        add_entry(a, &x, m[i].len);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* ---- the test images ---- */

static const ent L1[] = {
    {.path = "bin/", .type = AE_IFDIR, .mode = 0755},
    {.path = "bin/app", .type = AE_IFREG, .mode = 0755, .data = "app v1"},
    {.path = "bin/link", .type = AE_IFLNK, .link = "app"},
    {.path = "bin/hard", .link = "bin/app"},
    {.path = "etc/file", .type = AE_IFREG, .data = "old"},
    {.path = "etc/gone", .type = AE_IFREG, .data = "x"},
    {.path = "var/cache/old", .type = AE_IFREG, .data = "o"},
};
static const ent L2[] = {
    {.path = "etc/.wh.gone", .type = AE_IFREG},
    {.path = "var/cache/.wh..wh..opq", .type = AE_IFREG},
    {.path = "var/cache/new", .type = AE_IFREG, .data = "n"},
    {.path = "etc/file", .type = AE_IFREG, .data = "new"},
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

typedef struct opts {
    const char *name; /* OCI: io.containerd.image.name; docker: RepoTags[0] */
    const char *cmd;  /* makes the config, so the id, unique */
    const ent *l2;    /* layer 2 (default L2), gzip-compressed */
    size_t nl2;
    int tamper_layer;  /* change layer 2's blob after naming it */
    int tamper_config; /* change the config after naming it */
    int wrong_diff_id; /* the config lists a wrong diff id for layer 2 */
    int second_image;  /* OCI: a second image (cmd "two") in the index */
    const char *alias; /* OCI: the first manifest listed again under this name */
} opts;

typedef struct built {
    char id[SL_DIGEST_STR_LEN], id2[SL_DIGEST_STR_LEN];
    char manifest[SL_DIGEST_STR_LEN];
    char d1[SL_DIGEST_STR_LEN], d2[SL_DIGEST_STR_LEN];
} built;

typedef struct layer_set {
    buf t1, t2, b2; /* tars and layer 2's gzip blob */
} layer_set;

static void make_layers(const opts *o, layer_set *l, built *out)
{
    l->t1 = make_tar(L1, N(L1), 0);
    l->t2 = make_tar(o->l2 ? o->l2 : L2, o->l2 ? o->nl2 : N(L2), 0);
    l->b2 = make_tar(o->l2 ? o->l2 : L2, o->l2 ? o->nl2 : N(L2), 1);
    digest_of(l->t1.p, l->t1.len, out->d1);
    digest_of(l->t2.p, l->t2.len, out->d2);
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
    digest_of(data, len, digest);
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
    digest_of(l->b2.p, l->b2.len, ld2);
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

static void write_oci(const char *path, const opts *o, built *b)
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

static void write_docker(const char *path, const opts *o, built *b)
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

/* ---- fixture ---- */

typedef struct fx {
    char root[64], work[64];
    sl_image_store *s;
} fx;

static int fx_setup(void **state)
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

static int fx_teardown(void **state)
{
    fx *f = *state;
    sl_image_store_close(f->s);
    sl_rm_rf(f->root, NULL);
    sl_rm_rf(f->work, NULL);
    free(f);
    return 0;
}

static char *wpath(const fx *f, const char *name)
{
    static char p[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof(p[k]), "%s/%s", f->work, name);
    return p[k];
}

static void import_ok(fx *f, const char *path, const char *extra, size_t want_ids)
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

static const sl_image *find_ok(fx *f, const char *ref)
{
    sl_error e = {0};
    const sl_image *img = sl_image_store_find(f->s, ref, &e);
    if (!img)
        fail_msg("find %s: %s", ref, e.msg);
    return img;
}

static void assert_absent(fx *f, const char *ref)
{
    sl_error e = {0};
    assert_null(sl_image_store_find(f->s, ref, &e));
    assert_int_equal(e.errnum, ENOENT);
}

static size_t count_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    assert_int_equal(fscanf(p, "%zu", &n), 1);
    pclose(p);
    return n;
}

static void assert_file(const char *dir, const char *rel, const char *content)
{
    char path[512], *data;
    size_t len;
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    if (sl_read_file(path, 1 << 20, &data, &len, NULL) != 0)
        fail_msg("read %s", path);
    assert_int_equal(len, strlen(content));
    assert_memory_equal(data, content, len);
    free(data);
}

/* Everything under the root (but the lock) and the index's bytes. */
static char *snapshot(const fx *f)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd),
             "cd %s && find . -path ./lock -prune -o -printf '%%p %%s\\n' | sort; "
             "cat images.json 2>/dev/null",
             f->root);
    FILE *p = popen(cmd, "r");
    buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        buf_write(NULL, &b, chunk, n);
    pclose(p);
    buf_write(NULL, &b, "", 1);
    return (char *)b.p;
}

/* ---- references ---- */

static void test_ref_normalize(void **state)
{
    (void)state;
    static const char *const h64 =
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char in[200], want[300], out[SL_IMAGE_REF_MAX];
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"busybox", "docker.io/library/busybox:latest"},
        {"busybox:1.36", "docker.io/library/busybox:1.36"},
        {"library/busybox", "docker.io/library/busybox:latest"},
        {"docker.io/busybox", "docker.io/library/busybox:latest"},
        {"index.docker.io/library/busybox:x", "docker.io/library/busybox:x"},
        {"localhost/sluice/busybox:latest", "localhost/sluice/busybox:latest"},
        {"localhost:5000/a/b", "localhost:5000/a/b:latest"},
        {"quay.io/coreos/etcd:v3.5_x-1", "quay.io/coreos/etcd:v3.5_x-1"},
        {"registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"},
        {"a__b/c-d.e", "docker.io/a__b/c-d.e:latest"},
        {"user/repo", "docker.io/user/repo:latest"},
    };
    for (size_t i = 0; i < N(ok); i++) {
        sl_error e = {0};
        if (sl_image_ref_normalize(ok[i].in, out, sizeof(out), &e) != 0)
            fail_msg("%s: %s", ok[i].in, e.msg);
        assert_string_equal(out, ok[i].out);
    }
    snprintf(in, sizeof(in), "busybox@sha256:%s", h64);
    snprintf(want, sizeof(want), "docker.io/library/busybox@sha256:%s", h64);
    assert_int_equal(sl_image_ref_normalize(in, out, sizeof(out), NULL), 0);
    assert_string_equal(out, want);
    snprintf(in, sizeof(in), "k8s.gcr.io/pause:3.1@sha256:%s", h64);
    snprintf(want, sizeof(want), "k8s.gcr.io/pause:3.1@sha256:%s", h64);
    assert_int_equal(sl_image_ref_normalize(in, out, sizeof(out), NULL), 0);
    assert_string_equal(out, want);
    static const char *bad[] = {
        "",         "Busybox",    "a:b:c", "busybox@sha256:abc", "a/-b", "a//b",
        "busybox:", "busybox:-x", "a..b",  "localhost:99999x/a", ":tag", "busybox@md5:0123",
        "-a.io/x",  "a.io:/x"};
    for (size_t i = 0; i < N(bad); i++) {
        sl_error e = {0};
        if (sl_image_ref_normalize(bad[i], out, sizeof(out), &e) != -1)
            fail_msg("\"%s\" accepted as %s", bad[i], out);
        assert_int_equal(e.errnum, EINVAL);
    }
}

/* ---- imports ---- */

static void check_layers(const sl_image *img, const built *b)
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

static void check_config(const sl_image *img, const char *cmd)
{
    assert_int_equal(img->config.n_entrypoint, 1);
    assert_string_equal(img->config.entrypoint[0], "/bin/app");
    assert_int_equal(img->config.n_cmd, 1);
    assert_string_equal(img->config.cmd[0], cmd);
    assert_int_equal(img->config.n_env, 2);
    assert_string_equal(img->config.env[1], "A=b");
    assert_string_equal(img->config.workdir, "/work");
    assert_string_equal(img->config.user, "1000:1000");
    assert_string_equal(img->config.stop_signal, "SIGINT");
}

static void test_import_oci(void **state)
{
    fx *f = *state;
    built b;
    opts o = {.name = "localhost/sluice/test:v1"};
    write_oci(wpath(f, "oci.tar"), &o, &b);
    import_ok(f, wpath(f, "oci.tar"), NULL, 1);
    const sl_image *img = find_ok(f, "localhost/sluice/test:v1");
    assert_string_equal(img->id, b.id);
    assert_int_equal(img->n_repo_tags, 1);
    assert_string_equal(img->repo_tags[0], "localhost/sluice/test:v1");
    char rd[300];
    snprintf(rd, sizeof(rd), "localhost/sluice/test@%s", b.manifest);
    assert_int_equal(img->n_repo_digests, 1);
    assert_string_equal(img->repo_digests[0], rd);
    assert_int_equal(img->size, 6 + 3 + 1 + 1 + 1 + 3);
    check_layers(img, &b);
    check_config(img, "one");
    /* every way of naming it */
    char ref[100];
    assert_ptr_equal(find_ok(f, b.id), img);
    assert_ptr_equal(find_ok(f, b.id + 7), img);
    snprintf(ref, sizeof(ref), "%.12s", b.id + 7);
    assert_ptr_equal(find_ok(f, ref), img);
    snprintf(ref, sizeof(ref), "sha256:%.20s", b.id + 7);
    assert_ptr_equal(find_ok(f, ref), img);
    assert_ptr_equal(find_ok(f, rd), img);
    snprintf(ref, sizeof(ref), "localhost/sluice/test:v1@%s", b.manifest);
    assert_ptr_equal(find_ok(f, ref), img);
    snprintf(ref, sizeof(ref), "%.11s", b.id + 7); /* too short */
    sl_error e = {0};
    assert_null(sl_image_store_find(f->s, ref, &e));
    assert_absent(f, "localhost/sluice/test:v2");
    assert_absent(f, "busybox");
    snprintf(ref, sizeof(ref), "other/name@%s", b.manifest);
    assert_absent(f, ref);
    assert_null(sl_image_store_find(f->s, "Bad:Ref:", &e));
    assert_int_equal(e.errnum, EINVAL);
    /* the same manifest listed twice: one image, both names */
    opts o2 = {.name = "localhost/sluice/test:v1", .alias = "example.com/test:alias"};
    write_oci(wpath(f, "oci2.tar"), &o2, &b);
    import_ok(f, wpath(f, "oci2.tar"), NULL, 1);
    img = find_ok(f, "example.com/test:alias");
    assert_string_equal(img->id, b.id);
    assert_int_equal(img->n_repo_tags, 2);
    assert_int_equal(img->n_repo_digests, 2);
}

static void test_import_docker(void **state)
{
    fx *f = *state;
    built b, bo;
    opts o = {0};
    write_docker(wpath(f, "docker.tar"), &o, &b);
    import_ok(f, wpath(f, "docker.tar"), NULL, 1);
    const sl_image *img = find_ok(f, "test:docker");
    assert_string_equal(img->id, b.id);
    assert_string_equal(img->repo_tags[0], "docker.io/library/test:docker");
    assert_int_equal(img->n_repo_digests, 0); /* docker-archive has no manifest digest */
    check_layers(img, &b);
    check_config(img, "docker");
    /* an OCI image sharing both layers: nothing new unpacked */
    opts oo = {.name = "localhost/sluice/test:v1"};
    write_oci(wpath(f, "oci.tar"), &oo, &bo);
    import_ok(f, wpath(f, "oci.tar"), NULL, 1);
    assert_string_equal(bo.d1, b.d1);
    char layers[128];
    snprintf(layers, sizeof(layers), "%s/layers", f->root);
    assert_int_equal(count_dir(layers), 2);
    const sl_image **all;
    size_t n;
    assert_int_equal(sl_image_store_list(f->s, NULL, &all, &n, NULL), 0);
    assert_int_equal(n, 2);
    free(all);
}

static void test_tag_moves(void **state)
{
    fx *f = *state;
    built b1, b2;
    opts o1 = {.name = "localhost/app:1", .cmd = "first"};
    opts o2 = {.name = "localhost/app:1", .cmd = "second"};
    write_oci(wpath(f, "1.tar"), &o1, &b1);
    write_oci(wpath(f, "2.tar"), &o2, &b2);
    import_ok(f, wpath(f, "1.tar"), "localhost/app:keep", 1);
    import_ok(f, wpath(f, "2.tar"), NULL, 1);
    assert_string_equal(find_ok(f, "localhost/app:1")->id, b2.id);
    const sl_image *old = find_ok(f, b1.id);
    assert_int_equal(old->n_repo_tags, 1);
    assert_string_equal(old->repo_tags[0], "localhost/app:keep");
    /* importing again is idempotent and moves the tag back */
    import_ok(f, wpath(f, "1.tar"), NULL, 1);
    assert_string_equal(find_ok(f, "localhost/app:1")->id, b1.id);
    assert_int_equal(find_ok(f, b2.id)->n_repo_tags, 0); /* kept, untagged, like docker */
    assert_int_equal(find_ok(f, b1.id)->n_repo_tags, 2);
}

static void test_extra_tag(void **state)
{
    fx *f = *state;
    built b;
    opts o = {.name = "localhost/x:1", .second_image = 1};
    write_oci(wpath(f, "two.tar"), &o, &b);
    char *before = snapshot(f);
    sl_error e = {0};
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "two.tar"), "mine", NULL, &e), -1);
    assert_non_null(strstr(e.msg, "exactly one image"));
    char *after = snapshot(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "two.tar"), "bad tag!", NULL, &e), -1);
    import_ok(f, wpath(f, "two.tar"), NULL, 2);
    /* both index entries carry the same name: the later one gets it */
    assert_string_equal(find_ok(f, "localhost/x:1")->id, b.id2);
    opts one = {.cmd = "alone"};
    write_oci(wpath(f, "one.tar"), &one, &b);
    import_ok(f, wpath(f, "one.tar"), "mine", 1);
    const sl_image *img = find_ok(f, "mine");
    assert_string_equal(img->id, b.id);
    assert_string_equal(img->repo_tags[0], "docker.io/library/mine:latest");
}

/* ---- removal and listing ---- */

static void test_remove(void **state)
{
    fx *f = *state;
    built b1, b2;
    opts o1 = {.name = "localhost/r:1", .cmd = "r1"};
    static const ent other[] = {{.path = "only-here", .type = AE_IFREG, .data = "2"}};
    opts o2 = {.name = "localhost/r:2", .cmd = "r2", .l2 = other, .nl2 = 1};
    write_oci(wpath(f, "1.tar"), &o1, &b1);
    write_oci(wpath(f, "2.tar"), &o2, &b2);
    import_ok(f, wpath(f, "1.tar"), "localhost/r:alias", 1);
    import_ok(f, wpath(f, "2.tar"), NULL, 1);
    char layers[128], blobs[128];
    snprintf(layers, sizeof(layers), "%s/layers", f->root);
    snprintf(blobs, sizeof(blobs), "%s/blobs/sha256", f->root);
    assert_int_equal(count_dir(layers), 3);
    assert_int_equal(count_dir(blobs), 4);
    sl_error e = {0};
    assert_int_equal(sl_image_store_remove(f->s, "localhost/r:alias", &e), 0); /* untag */
    assert_int_equal(find_ok(f, b1.id)->n_repo_tags, 1);
    assert_absent(f, "localhost/r:alias");
    assert_int_equal(sl_image_store_remove(f->s, "localhost/r:alias", &e), 0); /* idempotent */
    assert_int_equal(sl_image_store_remove(f->s, "localhost/r:2", &e), 0);     /* last tag */
    assert_absent(f, b2.id);
    assert_int_equal(count_dir(layers), 2); /* layer 1 is shared, still used */
    assert_int_equal(count_dir(blobs), 2);
    assert_int_equal(sl_image_store_remove(f->s, "Bad!", &e), -1);
    assert_int_equal(e.errnum, EINVAL);
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "%.14s", b1.id + 7);
    assert_int_equal(sl_image_store_remove(f->s, prefix, &e), 0); /* by short id */
    assert_absent(f, "localhost/r:1");
    assert_int_equal(count_dir(layers), 0);
    assert_int_equal(count_dir(blobs), 0);
    assert_int_equal(sl_image_store_remove(f->s, b1.id, &e), 0);
    /* by repo digest, with all its tags */
    import_ok(f, wpath(f, "1.tar"), "localhost/r:alias", 1);
    char rd[300];
    snprintf(rd, sizeof(rd), "localhost/r@%s", b1.manifest);
    assert_int_equal(sl_image_store_remove(f->s, rd, &e), 0);
    assert_absent(f, "localhost/r:1");
    assert_absent(f, "localhost/r:alias");
}

static void test_list_filter(void **state)
{
    fx *f = *state;
    built b;
    opts o = {.name = "localhost/l:1"};
    write_oci(wpath(f, "l.tar"), &o, &b);
    const sl_image **imgs;
    size_t n;
    assert_int_equal(sl_image_store_list(f->s, NULL, &imgs, &n, NULL), 0);
    assert_int_equal(n, 0);
    free(imgs);
    import_ok(f, wpath(f, "l.tar"), NULL, 1);
    static const char *const hits[] = {"localhost/l:1", "", NULL};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(sl_image_store_list(f->s, hits[i], &imgs, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(imgs[0]->id, b.id);
        free(imgs);
    }
    static const char *const misses[] = {"localhost/l:2", "not valid!", "busybox"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(sl_image_store_list(f->s, misses[i], &imgs, &n, NULL), 0);
        assert_int_equal(n, 0);
        free(imgs);
    }
}

static void test_fs_usage(void **state)
{
    fx *f = *state;
    sl_image_fs_usage u0, u1;
    assert_int_equal(sl_image_store_fs_usage(f->s, &u0, NULL), 0);
    assert_string_equal(u0.mountpoint, f->root);
    built b;
    opts o = {.name = "localhost/u:1"};
    write_oci(wpath(f, "u.tar"), &o, &b);
    import_ok(f, wpath(f, "u.tar"), NULL, 1);
    assert_int_equal(sl_image_store_fs_usage(f->s, &u1, NULL), 0);
    /* layer 1: 5 directories, 5 inodes of files and links; layer 2: 4 and 3; 2 blobs */
    assert_true(u1.inodes_used >= u0.inodes_used + 19);
    assert_true(u1.used_bytes >= u0.used_bytes + 8 * 4096);
    assert_int_equal(sl_image_store_remove(f->s, b.id, NULL), 0);
    sl_image_fs_usage u2;
    assert_int_equal(sl_image_store_fs_usage(f->s, &u2, NULL), 0);
    assert_int_equal(u2.inodes_used, u0.inodes_used);
}

/* ---- crash recovery ---- */

static void touch(const char *root, const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    char *dir = strdup(path);
    assert_int_equal(sl_mkdir_p(dirname(dir), 0700, NULL), 0);
    free(dir);
    assert_int_equal(sl_write_file_atomic(path, "junk", 4, 0600, NULL), 0);
}

static void reopen(fx *f)
{
    sl_image_store_close(f->s);
    sl_error e = {0};
    f->s = sl_image_store_open(f->root, NULL, &e);
    if (!f->s)
        fail_msg("reopen: %s", e.msg);
}

static void test_recovery(void **state)
{
    fx *f = *state;
    built b;
    opts o = {.name = "localhost/c:1"};
    write_oci(wpath(f, "c.tar"), &o, &b);
    import_ok(f, wpath(f, "c.tar"), NULL, 1);
    /* what a SIGKILL in the middle of an import or removal leaves */
    touch(f->root, "tmp/import-abc123/0");
    touch(f->root, "tmp/layer-def456/usr/bin/half");
    touch(f->root, "tmp/gc-777777/d/x");
    touch(f->root, "layers/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/f");
    touch(f->root, "blobs/sha256/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    touch(f->root, "images.json.tmp4242");
    reopen(f);
    const sl_image_recovery *r = sl_image_store_recovery(f->s);
    assert_int_equal(r->tmp_removed, 4);
    assert_int_equal(r->layers_removed, 1);
    assert_int_equal(r->blobs_removed, 1);
    assert_int_equal(r->images_dropped, 0);
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/tmp", f->root);
    assert_int_equal(count_dir(dir), 0);
    check_layers(find_ok(f, "localhost/c:1"), &b);
    /* an image whose layer vanished is dropped, and what only it used goes */
    snprintf(dir, sizeof(dir), "%s/layers/%s", f->root, b.d2 + 7);
    assert_int_equal(sl_rm_rf(dir, NULL), 0);
    reopen(f);
    r = sl_image_store_recovery(f->s);
    assert_int_equal(r->images_dropped, 1);
    assert_int_equal(r->layers_removed, 1);
    assert_int_equal(r->blobs_removed, 2);
    assert_absent(f, "localhost/c:1");
    reopen(f); /* the index was rewritten: nothing more to do */
    r = sl_image_store_recovery(f->s);
    assert_int_equal(r->images_dropped + r->layers_removed + r->blobs_removed + r->tmp_removed, 0);
}

static void test_open_errors(void **state)
{
    fx *f = *state;
    sl_error e = {0};
    assert_null(sl_image_store_open(f->root, NULL, &e)); /* the first one holds the lock */
    assert_int_equal(e.errnum, EBUSY);
    sl_image_store_close(f->s);
    f->s = NULL;
    touch(f->root, "images.json");
    assert_null(sl_image_store_open(f->root, NULL, &e));
    assert_int_equal(e.errnum, EINVAL);
    assert_non_null(strstr(e.msg, "images.json"));
    char idx[128];
    snprintf(idx, sizeof(idx), "%s/images.json", f->root);
    const char *wrong = "{\"version\":1,\"images\":[{\"id\":\"nope\"}]}";
    assert_int_equal(sl_write_file_atomic(idx, wrong, strlen(wrong), 0600, NULL), 0);
    assert_null(sl_image_store_open(f->root, NULL, &e));
    assert_non_null(strstr(e.msg, "not a valid image index"));
    unlink(idx);
    reopen(f);
}

static void test_import_dir(void **state)
{
    fx *f = *state;
    built b1, b2;
    opts o1 = {.name = "localhost/d:1"};
    opts o2 = {.name = "d:2"};
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/images", f->work);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_oci(wpath(f, "images/a.tar"), &o1, &b1);
    write_docker(wpath(f, "images/b.tar"), &o2, &b2);
    touch(f->work, "images/notes.txt");
    size_t imported = 9, skipped = 9;
    sl_error e = {0};
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), 0);
    assert_int_equal(imported, 2);
    assert_int_equal(skipped, 0);
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), 0);
    assert_int_equal(imported, 0);
    assert_int_equal(skipped, 2);
    /* a removed image comes back; the unchanged other file is skipped */
    assert_int_equal(sl_image_store_remove(f->s, "d:2", &e), 0);
    reopen(f); /* the source records survive a restart */
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), 0);
    assert_int_equal(imported, 1);
    assert_int_equal(skipped, 1);
    find_ok(f, "docker.io/library/d:2");
    /* a bad file is reported and does not stop the others */
    touch(f->work, "images/0-bad.tar");
    write_oci(wpath(f, "images/a.tar"), &(opts){.name = "localhost/d:3", .cmd = "3"}, &b1);
    assert_int_equal(sl_image_store_import_dir(f->s, dir, &imported, &skipped, &e), -1);
    assert_non_null(strstr(e.msg, "0-bad.tar"));
    assert_int_equal(imported, 1);
    find_ok(f, "localhost/d:3");
    assert_int_equal(sl_image_store_import_dir(f->s, "/nonexistent-dir", NULL, NULL, &e), -1);
}

/* ---- hostile or broken tarballs: a clear error, and the store unchanged ---- */

typedef void (*writer)(const char *, const opts *, built *);

static void expect_fail(fx *f, writer w, const opts *o, const char *needle, const char *needle2)
{
    built b;
    w(wpath(f, "bad.tar"), o, &b);
    char *before = snapshot(f);
    sl_error e = {0};
    char **ids = (char **)1;
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "bad.tar"), NULL, &ids, &e), -1);
    assert_null(ids);
    if (!strstr(e.msg, needle) || (needle2 && !strstr(e.msg, needle2)))
        fail_msg("message \"%s\" lacks \"%s\"/\"%s\"", e.msg, needle, needle2 ? needle2 : "");
    char *after = snapshot(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

static void test_reject_digests(void **state)
{
    fx *f = *state;
    built good;
    opts base = {.name = "localhost/base:1", .cmd = "base"};
    write_oci(wpath(f, "base.tar"), &base, &good);
    import_ok(f, wpath(f, "base.tar"), NULL, 1); /* unchanged means: this stays */
    expect_fail(f, write_oci, &(opts){.name = "localhost/e:1", .tamper_layer = 1},
                "layer 2 sha256:", "digest mismatch");
    expect_fail(f, write_oci, &(opts){.name = "localhost/e:1", .tamper_config = 1}, "config",
                "digest mismatch");
    expect_fail(f, write_docker, &(opts){.tamper_config = 1}, "config", "digest mismatch");
    expect_fail(f, write_oci, &(opts){.name = "localhost/e:1", .wrong_diff_id = 1, .cmd = "w"},
                "layer 2/2", "diff_id mismatch");
    expect_fail(f, write_docker, &(opts){.wrong_diff_id = 1}, "layer 2/2", "diff_id mismatch");
    find_ok(f, "localhost/base:1");
}

static void test_reject_evil_layers(void **state)
{
    fx *f = *state;
    static const ent dotdot[] = {{.path = "../../escaped", .type = AE_IFREG, .data = "x"}};
    static const ent absolute[] = {{.path = "/tmp/sl-escaped", .type = AE_IFREG, .data = "x"}};
    static const ent through[] = {{.path = "l", .type = AE_IFLNK, .link = "/tmp"},
                                  {.path = "l/sl-escaped", .type = AE_IFREG, .data = "x"}};
    static const ent hard[] = {{.path = "h", .link = "../../../etc/passwd"}};
    static const struct {
        const ent *l;
        size_t n;
        const char *msg;
    } cases[] = {{dotdot, 1, "\"..\" component"},
                 {absolute, 1, "absolute path"},
                 {through, 2, "l is a symlink"},
                 {hard, 1, "hard link"}};
    for (size_t i = 0; i < N(cases); i++) {
        opts o = {.name = "localhost/evil:1", .l2 = cases[i].l, .nl2 = cases[i].n};
        expect_fail(f, write_oci, &o, "layer 2/2", cases[i].msg);
        expect_fail(f, write_docker, &o, "layer 2/2", cases[i].msg);
    }
    assert_int_equal(access("/tmp/sl-escaped", F_OK), -1);
    assert_int_equal(access("/tmp/sl-escaped", F_OK), -1);
}

static void write_file(const char *path, const void *data, size_t len)
{
    assert_int_equal(sl_write_file_atomic(path, data, len, 0600, NULL), 0);
}

static void test_reject_archives(void **state)
{
    fx *f = *state;
    sl_error e = {0};
    char *before = snapshot(f);
    /* truncated: every prefix of a good tarball fails cleanly */
    built b;
    write_oci(wpath(f, "good.tar"), &(opts){.name = "localhost/t:1"}, &b);
    char *data;
    size_t len;
    assert_int_equal(sl_read_file(wpath(f, "good.tar"), 1 << 24, &data, &len, NULL), 0);
    for (size_t cut = 0; cut + 1024 < len; cut += len / 9) {
        write_file(wpath(f, "cut.tar"), data, cut);
        if (sl_image_store_import(f->s, wpath(f, "cut.tar"), NULL, NULL, &e) != -1)
            fail_msg("cut at %zu accepted", cut);
        assert_non_null(strstr(e.msg, "cut.tar"));
    }
    free(data);
    /* a member declaring a huge size */
    unsigned char h[2048] = {0};
    memcpy(h, "index.json", 10);
    memcpy(h + 100,
           "0000644\0"
           "0000000\0"
           "0000000\0"
           "77777777777\0"
           "00000000000\0",
           48);
    h[156] = '0';
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    write_file(wpath(f, "huge.tar"), h, sizeof(h));
    sl_image_limits lim;
    sl_image_limits_default(&lim);
    lim.max_archive_bytes = 1 << 30;
    sl_image_store_close(f->s);
    f->s = sl_image_store_open(f->root, &lim, &e);
    assert_non_null(f->s);
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "huge.tar"), NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "index.json: declares 8589934591 bytes"));
    /* a member path escaping, and a tar that is no image */
    member m[1] = {{.name = "../index.json", .data = (unsigned char *)"{}", .len = 2}};
    write_outer(wpath(f, "esc.tar"), m, 1);
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "esc.tar"), NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "\"..\""));
    strcpy(m[0].name, "hello.txt");
    write_outer(wpath(f, "none.tar"), m, 1);
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "none.tar"), NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "neither an OCI layout"));
    assert_int_equal(sl_image_store_import(f->s, wpath(f, "missing.tar"), NULL, NULL, &e), -1);
    assert_int_equal(e.errnum, ENOENT);
    char *after = snapshot(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

/* Small limits: the image's unpacked size and the layer entry count. */
static void test_import_limits(void **state)
{
    fx *f = *state;
    sl_image_limits lim;
    sl_image_limits_default(&lim);
    lim.max_image_bytes = 4000; /* layer 1's tar alone is bigger */
    sl_image_store_close(f->s);
    sl_error e = {0};
    f->s = sl_image_store_open(f->root, &lim, &e);
    assert_non_null(f->s);
    expect_fail(f, write_oci, &(opts){.name = "localhost/big:1"}, "layer 1/2",
                "bytes uncompressed");
    lim.max_image_bytes = 1 << 20;
    lim.max_layer_entries = 5;
    sl_image_store_close(f->s);
    f->s = sl_image_store_open(f->root, &lim, &e);
    expect_fail(f, write_docker, &(opts){0}, "layer 1/2", "over 5 entries");
    lim.max_layers = 1;
    sl_image_store_close(f->s);
    f->s = sl_image_store_open(f->root, &lim, &e);
    expect_fail(f, write_oci, &(opts){.name = "localhost/big:1"}, "2 layers, over 1", NULL);
}

/* ---- the project's busybox image (scripts/busybox-image) ---- */

static int source_root(char *out, size_t n)
{
    /* the build root is three levels above this executable
     * (<build>/tests/unit/x); __FILE__ is relative to it (or absolute) */
    char exe[512];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len <= 0)
        return -1;
    exe[len] = '\0';
    char file[1024];
    if (__FILE__[0] == '/')
        snprintf(file, sizeof(file), "%s", __FILE__);
    else
        snprintf(file, sizeof(file), "%s/%s", dirname(dirname(dirname(exe))), __FILE__);
    char *real = realpath(file, NULL);
    if (!real)
        return -1;
    snprintf(out, n, "%s/../..", dirname(real));
    free(real);
    return 0;
}

static void test_busybox_image(void **state)
{
    fx *f = *state;
    char root[1024], cmd[2048];
    if (access("/bin/busybox", X_OK) != 0 || source_root(root, sizeof(root)) != 0) {
        print_message("busybox-static or the source tree is missing: skipped\n");
        skip();
    }
    snprintf(cmd, sizeof(cmd), "%s/scripts/busybox-image %s >/dev/null 2>&1", root,
             wpath(f, "busybox.tar"));
    if (system(cmd) != 0) {
        print_message("scripts/busybox-image failed: skipped\n");
        skip();
    }
    import_ok(f, wpath(f, "busybox.tar"), NULL, 2);
    const sl_image *bb = find_ok(f, "localhost/sluice/busybox:latest");
    const sl_image *pause = find_ok(f, "localhost/sluice/pause");
    assert_int_equal(bb->n_layers, 1);
    assert_string_equal(bb->layer_dirs[0], pause->layer_dirs[0]);
    assert_int_equal(bb->config.n_cmd, 1);
    assert_string_equal(bb->config.cmd[0], "sh");
    assert_string_equal(pause->config.entrypoint[0], "/bin/pause");
    assert_string_equal(bb->config.workdir, "/");
    assert_int_equal(bb->n_repo_digests, 1);
    char path[1024];
    snprintf(path, sizeof(path), "%s/bin/busybox", bb->layer_dirs[0]);
    assert_int_equal(access(path, X_OK), 0);
    char target[32] = {0};
    snprintf(path, sizeof(path), "%s/bin/sh", bb->layer_dirs[0]);
    assert_int_equal(readlink(path, target, sizeof(target) - 1), 7);
    assert_string_equal(target, "busybox");
    struct stat st;
    snprintf(path, sizeof(path), "%s/tmp", bb->layer_dirs[0]);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 01777);
    assert_true(bb->size > 100000);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_normalize),
        T(test_import_oci),
        T(test_import_docker),
        T(test_tag_moves),
        T(test_extra_tag),
        T(test_remove),
        T(test_list_filter),
        T(test_fs_usage),
        T(test_recovery),
        T(test_open_errors),
        T(test_import_dir),
        T(test_reject_digests),
        T(test_reject_evil_layers),
        T(test_reject_archives),
        T(test_import_limits),
        T(test_busybox_image),
    };
    if (geteuid() != 0) {
        print_message("the image store needs root (chown, mknod, trusted xattrs): skipped\n");
        return 0;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
