/* A CNI plugin's answer, as sluiced reads it: the pod's addresses
 * (sl_cni_result_ips, also run on results kept on disk) and the answer
 * passed on as the next plugin's prevResult (sl_cni_plugin_conf, then
 * serialised as it is fed to the plugin). Any bytes give at most
 * SL_CNI_MAX_IPS addresses without a prefix length, and nothing leaks
 * (LeakSanitizer). The input is an exact heap copy, NUL-terminated. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pod/cni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ips(const char *text)
{
    char *ips[SL_CNI_MAX_IPS];
    size_t n = sl_cni_result_ips(text, ips, SL_CNI_MAX_IPS);
    if (n > SL_CNI_MAX_IPS)
        __builtin_trap();
    for (size_t i = 0; i < n; i++) {
        if (!ips[i] || strchr(ips[i], '/'))
            __builtin_trap(); /* the prefix length is cut off */
        free(ips[i]);
    }
}

static void check_prev_result(const char *text)
{
    json_t *prev = json_loads(text, 0, NULL);
    if (!prev)
        return;
    json_t *list =
        json_pack("{s:s, s:s, s:[{s:s, s:{s:b}}]}", "cniVersion", "1.0.0", "name", "fuzz",
                  "plugins", "type", "portmap", "capabilities", SL_CNI_CAP_PORTMAP, 1);
    sl_cni_portmap pm = {.host_port = 8080, .container_port = 80, .protocol = "tcp"};
    sl_cni_opts o = {.portmaps = &pm, .n_portmaps = 1};
    json_t *caps = sl_cni_capability_args(&o);
    sl_error e = {0};
    json_t *conf = list && caps ? sl_cni_plugin_conf(list, 0, caps, prev, &e) : NULL;
    char *stdin_text = conf ? json_dumps(conf, JSON_COMPACT) : NULL;
    free(stdin_text);
    json_decref(conf);
    json_decref(caps);
    json_decref(list);
    json_decref(prev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    check_ips(text);
    check_prev_result(text);
    free(text);
    return 0;
}
