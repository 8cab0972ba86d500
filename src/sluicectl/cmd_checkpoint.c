/* checkpoint: CRI CheckpointContainer, as `crictl checkpoint`: each
 * container checkpointed into the archive --export names. */
#include <stdio.h>

#include "cmd_util.h"

static const char checkpoint_help[] =
    "Usage: sluicectl checkpoint -e FILE.tar CONTAINER-ID...\n"
    "\n"
    "Checkpoints running containers (ID, unique ID prefix or name) into a tar\n"
    "archive (CRI CheckpointContainer) and prints each ID. sluiced has no\n"
    "checkpoint/restore and refuses it (Unimplemented).\n"
    "\n"
    "  -e, --export FILE   the archive to write (required)\n"
    "  -h, --help          this help\n";

static int export_opt(void *arg, int id, const char *val)
{
    (void)id;
    *(const char **)arg = val;
    return 0;
}

static int checkpoint_one(ctl *c, const char *id, void *arg, sl_error *e)
{
    Runtime__V1__CheckpointContainerRequest req = RUNTIME__V1__CHECKPOINT_CONTAINER_REQUEST__INIT;
    req.container_id = (char *)id;
    req.location = arg;
    void *r = ctl_rt_call_slow(c, "CheckpointContainer", &req.base,
                               &runtime__v1__checkpoint_container_response__descriptor, e);
    if (!r)
        return -1;
    ctl_free_msg(r);
    puts(id);
    return 0;
}

int cmd_checkpoint(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {
        {"export", required_argument, NULL, 'e'}, CTL_OPT_HELP, CTL_OPT_END};
    const char *export = NULL;
    int first, rc;
    if (ctl_parse(c, argc, argv, "e:", lo, checkpoint_help, export_opt, &export, &first, &rc))
        return rc;
    if (first == argc)
        return ctl_usage(c, "needs a CONTAINER-ID (see sluicectl checkpoint --help)");
    if (!export || !*export)
        return ctl_usage(c, "needs the archive to write: --export /path/to/checkpoint.tar");
    return cu_each(c, argc - first, argv + first, CU_CTR, checkpoint_one, (void *)export);
}
