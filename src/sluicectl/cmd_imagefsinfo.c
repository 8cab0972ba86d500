/* imagefsinfo: CRI ImageFsInfo, as `crictl imagefsinfo`: {"status": ...}
 * as JSON (default) or YAML, or crictl's key: value table. */
#include <stdio.h>

#include "cmd_util.h"

static const char imagefsinfo_help[] =
    "Usage: sluicectl imagefsinfo [-o json|yaml|table]\n"
    "\n"
    "Shows the filesystems that hold images and containers' writable layers\n"
    "(CRI ImageFsInfo): mount point, bytes and inodes used.\n"
    "\n"
    "  -o, --output FORMAT   json (default), yaml or table\n"
    "  -h, --help            this help\n";

static void fs_table(const char *label, Runtime__V1__FilesystemUsage **fs, size_t n)
{
    printf("%s Filesystem \n", label); /* crictl's trailing blank */
    for (size_t i = 0; i < n; i++) {
        char size[32];
        ctl_human_size_prec(fs[i]->used_bytes ? fs[i]->used_bytes->value : 0, 4, size, sizeof size);
        printf("TimeStamp[%zu]: %lld\n", i, (long long)fs[i]->timestamp);
        printf("Disk[%zu]: %s\n", i, size);
        printf("Inodes[%zu]: %llu\n", i,
               (unsigned long long)(fs[i]->inodes_used ? fs[i]->inodes_used->value : 0));
        printf("Mountpoint[%zu]: %s\n", i, fs[i]->fs_id ? fs[i]->fs_id->mountpoint : "");
    }
}

int cmd_imagefsinfo(ctl *c, int argc, char **argv)
{
    sl_error e;
    ctl_out out = CTL_OUT_JSON;
    cu_out_arg oa = {c, &out, true};
    int rc;
    if (cu_parse_out_only(c, argc, argv, imagefsinfo_help, &oa,
                          "takes no arguments (see sluicectl imagefsinfo --help)", &rc))
        return rc;
    Runtime__V1__ImageFsInfoRequest req = RUNTIME__V1__IMAGE_FS_INFO_REQUEST__INIT;
    Runtime__V1__ImageFsInfoResponse *r = (void *)ctl_img_call(
        c, "ImageFsInfo", &req.base, &runtime__v1__image_fs_info_response__descriptor, &e);
    if (!r)
        return ctl_fail(c, &e);
    if (out == CTL_OUT_TABLE) {
        fs_table("Container", r->container_filesystems, r->n_container_filesystems);
        fs_table("Image", r->image_filesystems, r->n_image_filesystems);
    } else {
        json_t *doc = json_object();
        json_object_set_new(doc, "status", ctl_msg_to_json(&r->base));
        ctl_print_doc(doc, out);
        json_decref(doc);
    }
    ctl_free_msg(r);
    return 0;
}
