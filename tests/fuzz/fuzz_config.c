/* tests/fuzz/fuzz_config.c: libFuzzer target for the INI parser and validator.
 * Property checked beyond "no crash": a config that parses is printed by the resolved-config
 * writer and must parse back to the identical values.
 *
 *   make fuzz && build/fuzz/fuzz_config tests/fuzz/corpus_config -max_total_time=60 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/config.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static nst_config a, b;
    nst_fail_clear();
    nst_config_defaults(&a);
    if (nst_config_parse(&a, "fuzz.ini", "base", (const char *)data, size) != NST_OK) return 0;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    nst_config_write(&a, f);
    fclose(f);
    nst_config_defaults(&b);
    if (nst_config_parse(&b, "printed.ini", "", text, len) != NST_OK) {
        fprintf(stderr, "printed config does not parse: %s\n%s", nst_fail_message(), text);
        abort();
    }
    int n;
    const nst_key_info *k = nst_config_keys(&n);
    for (int i = 0; i < n; i++)
        if (memcmp((char *)&a + k[i].offset, (char *)&b + k[i].offset, k[i].size) != 0) {
            fprintf(stderr, "%s differs after printing and parsing back\n", k[i].full);
            abort();
        }
    free(text);
    return 0;
}
