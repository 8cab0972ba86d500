/* sluiced's config file: any bytes either load or give an error naming the
 * problem; what loads must pass sl_config_finish or fail it with a message,
 * and every string a loaded config holds must be freed by sl_config_fini
 * (LeakSanitizer). The input is an exact heap copy (over-reads caught). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    sl_config c;
    sl_error e = {0};
    sl_config_init(&c);
    if (sl_config_load_json(&c, text, size, "fuzz.json", &e) < 0) {
        if (!e.msg[0])
            __builtin_trap(); /* an error always says what */
    } else if (sl_config_finish(&c, &e) < 0 && !e.msg[0]) {
        __builtin_trap();
    }
    sl_config_fini(&c);
    free(text);
    return 0;
}
