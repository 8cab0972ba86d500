/* pull: CRI PullImage, as `crictl pull`; and the pulling shared with create
 * and run (credentials, the pull's deadline, --with-pull/--no-pull).
 * sluiced reaches no registry: its PullImage imports from its import
 * directory (see `image import`); other runtimes pull for real. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cmd_util.h"

#define PASSWORD_MAX 4096 /* bytes of a password read from stdin */

static const char pull_help[] =
    "Usage: sluicectl pull [FLAGS] NAME[:TAG|@DIGEST]\n"
    "\n"
    "Pulls an image (CRI PullImage) and prints \"Image is up to date for REF\".\n"
    "sluiced pulls from no registry: it imports the image from the tarballs in\n"
    "its import directory (sluicectl image import FILE puts one there).\n"
    "\n"
    "      --creds USER[:PASSWORD]     registry credentials\n"
    "      --auth AUTH                 base64 of USER[:PASSWORD]\n"
    "  -u, --username USER             registry user; the password is read from stdin\n"
    "                                  (without echo on a terminal)\n"
    "      --pod-config FILE           the PodSandboxConfig the image is pulled for\n"
    "  -a, --annotation KEY=VALUE      annotation of the image spec (repeatable)\n"
    "      --pull-timeout, --pt D      deadline of the pull, e.g. 10m (default 0: none)\n"
    "  -h, --help                      this help\n";

/* ---- shared with create and run ---- */

static int parse_ms(ctl *c, const char *flag, const char *val, uint64_t *ms)
{
    if (ctl_parse_duration_ms(val, ms) < 0)
        return ctl_usage(c, "%s: \"%s\" is not a duration such as 30s or 10m", flag, val);
    return 0;
}

int cu_pull_opt(ctl *c, cu_pull *p, int id, const char *val)
{
    switch (id) {
    case CU_CREDS:
        p->creds = val;
        return 0;
    case CU_AUTH:
        p->auth = val;
        return 0;
    case CU_USERNAME:
        p->username = val;
        return 0;
    case CU_PULL_TIMEOUT:
        return parse_ms(c, "--pull-timeout", val, &p->timeout_ms);
    case CU_WITH_PULL:
        p->with = true;
        return 0;
    case CU_NO_PULL:
        p->without = true;
        return 0;
    case CU_CANCEL_TIMEOUT:
        return parse_ms(c, "--cancel-timeout", val, &p->cancel_ms);
    default:
        return 1;
    }
}

/* Reads a password line from stdin, without echo when it is a terminal. */
static char *read_password(void)
{
    struct termios old, quiet;
    bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
    fputs("Enter Password:", stderr);
    if (tty) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    char *buf = calloc(1, PASSWORD_MAX);
    if (buf && !fgets(buf, PASSWORD_MAX, stdin))
        buf[0] = '\0';
    if (tty)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    fputc('\n', stderr);
    if (buf)
        buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

/* The AuthConfig the flags give, as crictl builds it; NULL without any.
 * Returns -1 with e set when they contradict each other. */
static int auth_config(cu_pull *p, Runtime__V1__AuthConfig **out, sl_error *e)
{
    *out = NULL;
    Runtime__V1__AuthConfig *a = &p->ac;
    runtime__v1__auth_config__init(a);
    if (p->username) {
        a->username = (char *)p->username;
        a->password = p->password = read_password();
    } else if (p->creds && p->auth) {
        return sl_error_set(e, 0, "give --creds or --auth, not both");
    } else if (p->creds) {
        char *colon = strchr(p->creds, ':');
        if (!*p->creds || colon == p->creds)
            return sl_error_set(e, 0, "--creds needs USER[:PASSWORD] with a user");
        a->username = p->user =
            colon ? strndup(p->creds, (size_t)(colon - p->creds)) : strdup(p->creds);
        a->password = colon ? colon + 1 : (char *)"";
    } else if (p->auth) {
        a->auth = (char *)p->auth;
    } else {
        return 0;
    }
    *out = a;
    return 0;
}

void cu_pull_fini(cu_pull *p)
{
    free(p->password);
    free(p->user);
    p->password = p->user = NULL;
}

/* Whether the runtime has img; *err (with e set) when it could not say. */
static bool have_image(ctl *c, Runtime__V1__ImageSpec *img, int *err, sl_error *e)
{
    Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
    req.image = img;
    Runtime__V1__ImageStatusResponse *s = (void *)ctl_img_call(
        c, "ImageStatus", &req.base, &runtime__v1__image_status_response__descriptor, e);
    *err = !s;
    bool have = s && s->image;
    ctl_free_msg(s);
    return have;
}

char *cu_pull_image(ctl *c, cu_pull *p, Runtime__V1__ImageSpec *img,
                    Runtime__V1__PodSandboxConfig *sandbox, bool only_missing, sl_error *e)
{
    int err = 0;
    if (only_missing && have_image(c, img, &err, e)) {
        char *ref = strdup(img->image);
        if (!ref)
            sl_error_set(e, ENOMEM, "%s", img->image);
        return ref;
    }
    Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
    if (err || auth_config(p, &req.auth, e) < 0)
        return NULL;
    req.image = img;
    req.sandbox_config = sandbox;
    ctl_debug(c, "pulling %s", img->image);
    ProtobufCMessage *r;
    sl_error ce;
    uint32_t tmo = p->timeout_ms && p->timeout_ms < CTL_NO_DEADLINE_MS ? (uint32_t)p->timeout_ms
                                                                       : CTL_NO_DEADLINE_MS;
    int st = ctl_call_raw(c, true, "PullImage", &req.base,
                          &runtime__v1__pull_image_response__descriptor, &r, tmo, &ce, e);
    char *ref = st == SL_CRI_OK ? strdup(((Runtime__V1__PullImageResponse *)r)->image_ref) : NULL;
    if (st == SL_CRI_OK && !ref)
        sl_error_set(e, ENOMEM, "PullImage");
    ctl_free_msg(r);
    return ref;
}

/* ---- pull ---- */

enum { P_POD_CONFIG = 1200 };

typedef struct pull_opts {
    ctl *c;
    cu_pull p;
    const char *pod_config;
    cu_labels ann;
} pull_opts;

static int pull_opt(void *arg, int id, const char *val)
{
    pull_opts *o = arg;
    if (id == P_POD_CONFIG) {
        o->pod_config = val;
        return 0;
    }
    if (id == 'a')
        return cu_labels_add(o->c, &o->ann, val, "--annotation");
    return cu_pull_opt(o->c, &o->p, id == 'u' ? CU_USERNAME : id, val) ? -1 : 0;
}

static int pull(ctl *c, pull_opts *o, const char *name)
{
    ctl_arena *a = ctl_arena_new();
    Runtime__V1__PodSandboxConfig *sb = NULL;
    sl_error e;
    if (o->pod_config &&
        !(sb = (void *)ctl_doc_load(o->pod_config, &runtime__v1__pod_sandbox_config__descriptor, a,
                                    &e))) {
        ctl_arena_free(a);
        return ctl_fail(c, &e);
    }
    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    spec.image = (char *)name;
    spec.n_annotations = o->ann.n;
    spec.annotations = (void *)o->ann.ents;
    char *ref = cu_pull_image(c, &o->p, &spec, sb, false, &e);
    if (ref)
        printf("Image is up to date for %s\n", ref);
    free(ref);
    ctl_arena_free(a);
    return ref ? 0 : ctl_fail(c, &e);
}

int cmd_pull(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {CU_PULL_AUTH_OPTS,
                                       {"pod-config", required_argument, NULL, P_POD_CONFIG},
                                       {"annotation", required_argument, NULL, 'a'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    pull_opts o = {.c = c, .ann.d = &runtime__v1__image_spec__annotations_entry__descriptor};
    int first, rc;
    if (ctl_parse(c, argc, argv, "u:a:", lo, pull_help, pull_opt, &o, &first, &rc) == 0) {
        if (argc - first != 1)
            rc = ctl_usage(c, "needs exactly one image NAME (see sluicectl pull --help)");
        else
            rc = pull(c, &o, argv[first]);
    }
    cu_labels_free(&o.ann);
    cu_pull_fini(&o.p);
    return rc;
}
