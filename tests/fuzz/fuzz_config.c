/* tests/fuzz/fuzz_config.c: libFuzzer target for the INI parser and validator, [job.NAME] sections
 * included. Property checked beyond "no crash": a config that parses is printed by the
 * resolved-config writer (its jobs too) and must parse back to the identical values.
 *
 *   make fuzz && build/fuzz/fuzz_config tests/fuzz/corpus_config -max_total_time=60 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/config/config.h"
#include "../../io/config/jobs.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static nst_config a, b;
    nst_jobset ja, jb;
    nst_fail_clear();
    nst_config_defaults(&a);
    nst_jobset_init(&ja);
    nst_jobset_init(&jb);
    if (nst_config_parse(&a, &ja, "fuzz.ini", "base", (const char *)data, size) != NST_OK) {
        nst_jobset_free(&ja);
        return 0;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    nst_config_write(&a, f, NULL);
    nst_jobset_write(&ja, f, NULL);
    fclose(f);
    nst_config_defaults(&b);
    if (nst_config_parse(&b, &jb, "printed.ini", "", text, len) != NST_OK) {
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
    if (ja.njobs != jb.njobs || ja.nov != jb.nov) {
        fprintf(stderr, "jobs differ after printing and parsing back\n%s", text);
        abort();
    }
    for (int i = 0; i < ja.nov; i++)
        if (ja.ov[i].key != jb.ov[i].key || strcmp(ja.text + ja.ov[i].value, jb.text + jb.ov[i].value) != 0) {
            fprintf(stderr, "job override %d differs after printing and parsing back\n%s", i, text);
            abort();
        }
    nst_jobset_free(&ja);
    nst_jobset_free(&jb);
    free(text);
    return 0;
}
