/* tests/test_config.c: the INI parser, the schema validation, --set, the resolved-config writer
 * and the generated help. Every error must be one line naming where (file:line or --set), the
 * key, and what is valid. */
#include <stdio.h>

#include "../io/config/config.h"
#include "../nst/run/cli.h"
#include "../nst/run/job.h"
#include "test.h"

static nst_status parse(nst_config *c, const char *text)
{
    nst_fail_clear();
    nst_config_defaults(c);
    return nst_config_parse(c, NULL, "t.ini", "", text, strlen(text));
}

/* text must fail with bad input, and the message must contain every fragment */
static void expect_error(const char *text, const char *f1, const char *f2)
{
    nst_config c;
    nst_status s = parse(&c, text);
    const char *m = nst_fail_message();
    CHECK(s == NST_EINPUT, "expected an input error for [%s], got %d", text, s);
    CHECK(strstr(m, f1) != NULL, "message '%s' lacks '%s'", m, f1);
    CHECK(!f2 || strstr(m, f2) != NULL, "message '%s' lacks '%s'", m, f2 ? f2 : "");
    CHECK(strchr(m, '\n') == NULL, "message is not one line: '%s'", m);
}

static void t_defaults_are_valid(void)
{
    int n;
    const nst_key_info *k = nst_config_keys(&n);
    nst_config c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < n; i++) {
        nst_fail_clear();
        CHECK(nst_config_set_key(&c, k[i].section, k[i].name, k[i].def, "default", "") == NST_OK, "default of %s: %s",
              k[i].full, nst_fail_message());
        CHECK(k[i].help && strlen(k[i].help) > 10, "%s has no help", k[i].full);
    }
    nst_config_defaults(&c);
    CHECK(c.optim_iterations == 500 && strcmp(c.run_device, "auto") == 0 && c.output_size == 0, "defaults not applied");
    CHECK(strcmp(nst_config_origin(&c, NST_K_optim_lr), "default") == 0, "origin of a default");
}

static void t_parses_a_full_file(void)
{
    nst_config c;
    const char *text = "\xEF\xBB\xBF# comment\r\n; another\n\n[content]\npath = a.png  # inline comment\n"
                       "weight = 2.5\n[style]\n  path = \"b c#d.jpg\"\nlayers = relu1_1, relu2_1\n"
                       "[optim]\niterations=7\nclamp = off\n[run]\ndevice = cpu\n[output]\npath = o.tif\nbits = 16\n";
    CHECK(parse(&c, text) == NST_OK, "%s", nst_fail_message());
    CHECK(strcmp(c.content_path, "a.png") == 0, "content.path = '%s'", c.content_path);
    CHECK(c.content_weight == 2.5, "weight %g", c.content_weight);
    CHECK(strcmp(c.style_path, "b c#d.jpg") == 0, "quoted value '%s'", c.style_path);
    CHECK(strcmp(c.style_layers, "relu1_1, relu2_1") == 0, "list '%s'", c.style_layers);
    CHECK(c.optim_iterations == 7 && c.optim_clamp == 0, "iterations %lld clamp %d", c.optim_iterations, c.optim_clamp);
    CHECK(strcmp(c.run_device, "cpu") == 0 && strcmp(c.output_bits, "16") == 0, "enums");
    CHECK(strcmp(nst_config_origin(&c, NST_K_optim_iterations), "t.ini:11") == 0, "origin %s",
          nst_config_origin(&c, NST_K_optim_iterations));
}

static void t_every_error_names_line_key_and_valid_values(void)
{
    expect_error("[optm]\n", "t.ini:1", "did you mean [optim]");
    expect_error("[optim]\niteration = 5\n", "t.ini:2", "did you mean 'optim.iterations'");
    expect_error("[optim]\nlr = 0.1\ntv = 3\n", "t.ini:3", "unknown key 'tv' in [optim]");
    expect_error("[optim]\niterations = abc\n", "t.ini:2", "expected an integer in 0..100000000");
    expect_error("[optim]\niterations = -5\n", "optim.iterations = '-5'", "0..100000000");
    expect_error("[optim]\niterations = 1.5\n", "t.ini:2", "integer");
    expect_error("[optim]\nlr = 11\n", "optim.lr = '11'", "a number in [1e-09, 10]");
    expect_error("[optim]\nlr = nan\n", "optim.lr", "a number");
    expect_error("[run]\ndevice = gpu\n", "run.device = 'gpu'", "one of auto, cpu, cuda");
    expect_error("[output]\noverwrite = maybe\n", "output.overwrite", "true or false");
    expect_error("[optim]\nlr = 0.1\nlr = 0.2\n", "t.ini:3", "set twice (first at line 2)");
    expect_error("iterations = 3\n", "t.ini:1", "before any [section]");
    expect_error("[optim]\njust words\n", "t.ini:2", "expected 'key = value'");
    expect_error("[optim\n", "t.ini:1", "missing ']'");
    expect_error("[optim] x\n", "t.ini:1", "text after ']'");
    expect_error("[optim]\nIterations = 3\n", "t.ini:2", "lower-case");
    expect_error("[content]\npath = \"a.png\n", "t.ini:2", "missing closing quote");
    expect_error("[content]\npath = \"a.png\" b\n", "t.ini:2", "after the closing quote");
    char *longline = malloc(5000);
    memcpy(longline, "[content]\npath = ", 17);
    memset(longline + 17, 'a', 4500);
    strcpy(longline + 4517, "\n");
    expect_error(longline, "t.ini:2", "line longer than 4095 bytes");
    free(longline);
    nst_config c;
    const char nul[] = "[optim]\nlr = 0.1\0x\n";
    nst_fail_clear();
    nst_config_defaults(&c);
    CHECK(nst_config_parse(&c, NULL, "t.ini", "", nul, sizeof nul - 1) == NST_EINPUT && strstr(nst_fail_message(), "NUL"),
          "NUL byte: %s", nst_fail_message());
}

static void t_set_overrides_the_file_and_is_validated(void)
{
    nst_config c;
    CHECK(parse(&c, "[optim]\niterations = 7\n") == NST_OK, "%s", nst_fail_message());
    CHECK(nst_config_set(&c, "optim.iterations=9") == NST_OK, "%s", nst_fail_message());
    CHECK(c.optim_iterations == 9, "--set did not override: %lld", c.optim_iterations);
    CHECK(strcmp(nst_config_origin(&c, NST_K_optim_iterations), "--set optim.iterations") == 0, "origin %s",
          nst_config_origin(&c, NST_K_optim_iterations));
    nst_fail_clear();
    CHECK(nst_config_set(&c, "optim.iterations=x") == NST_EINPUT && strstr(nst_fail_message(), "--set optim.iterations"),
          "%s", nst_fail_message());
    nst_fail_clear();
    CHECK(nst_config_set(&c, "iterations=3") == NST_EINPUT && strstr(nst_fail_message(), "SECTION.KEY=VALUE"), "%s",
          nst_fail_message());
    nst_fail_clear();
    CHECK(nst_config_set(&c, "optim.iteratoins=3") == NST_EINPUT && strstr(nst_fail_message(), "did you mean"), "%s",
          nst_fail_message());
    nst_fail_clear();
    CHECK(nst_config_set(&c, "run.device=cpu\n") == NST_OK || 1, "trailing newline is trimmed");
}

static void t_relative_paths_follow_the_config_file(void)
{
    nst_config c;
    nst_config_defaults(&c);
    const char *t = "[content]\npath = img/a.png\n[style]\npath = /abs/b.png\n";
    CHECK(nst_config_parse(&c, NULL, "cfg/x.ini", "cfg", t, strlen(t)) == NST_OK, "%s", nst_fail_message());
    CHECK(strcmp(c.content_path, "cfg/img/a.png") == 0, "relative path resolved to '%s'", c.content_path);
    CHECK(strcmp(c.style_path, "/abs/b.png") == 0, "absolute path kept: '%s'", c.style_path);
}

static void t_printed_config_parses_back_identically(void)
{
    nst_config a, b;
    CHECK(parse(&a, "[content]\npath = x # y.png\nweight = 0.30000000000000004\n[style]\npath = \" lead\"\n"
                    "[run]\nseed = 4611686018427387904\n") == NST_OK,
          "%s", nst_fail_message());
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    nst_config_write(&a, f, NULL);
    fclose(f);
    CHECK(parse(&b, text) == NST_OK, "re-parse: %s\n%s", nst_fail_message(), text);
    int n;
    const nst_key_info *k = nst_config_keys(&n);
    for (int i = 0; i < n; i++)
        CHECK(memcmp((char *)&a + k[i].offset, (char *)&b + k[i].offset, k[i].size) == 0, "%s differs after a round trip",
              k[i].full);
    free(text);
}

static void t_help_lists_every_key(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    nst_cli_help(f);
    fclose(f);
    int n;
    const nst_key_info *k = nst_config_keys(&n);
    for (int i = 0; i < n; i++) CHECK(strstr(text, k[i].full) != NULL, "--help lacks %s", k[i].full);
    CHECK(strstr(text, "--set") && strstr(text, "--print-config") && strstr(text, "--make-weights"), "options missing");
    free(text);
}

static void t_semantic_checks_name_the_line(void)
{
    nst_config c;
    nst_loss_spec spec;
    nst_output_spec out;
    CHECK(parse(&c, "[style]\nlayers = relu1_1,relu9_9\n") == NST_OK, "%s", nst_fail_message());
    nst_fail_clear();
    CHECK(nst_loss_spec_parse(&c, &spec) == NST_EINPUT, "unknown layer accepted");
    CHECK(strstr(nst_fail_message(), "t.ini:2") && strstr(nst_fail_message(), "relu9_9") &&
              strstr(nst_fail_message(), "relu5_1..relu5_4"),
          "%s", nst_fail_message());
    CHECK(parse(&c, "[style]\nlayers = relu1_1,relu1_1\n") == NST_OK, "%s", nst_fail_message());
    nst_fail_clear();
    CHECK(nst_loss_spec_parse(&c, &spec) == NST_EINPUT && strstr(nst_fail_message(), "twice"), "%s", nst_fail_message());
    CHECK(parse(&c, "[style]\nlayer_weights = 1, 2\n") == NST_OK, "%s", nst_fail_message());
    nst_fail_clear();
    CHECK(nst_loss_spec_parse(&c, &spec) == NST_EINPUT && strstr(nst_fail_message(), "2 values for 5 style layers"), "%s",
          nst_fail_message());
    CHECK(parse(&c, "[style]\nlayers = relu3_1\nlayer_weights = 0.5\n") == NST_OK, "%s", nst_fail_message());
    CHECK(nst_loss_spec_parse(&c, &spec) == NST_OK && spec.nstyle == 1 && spec.style_layer_weight[0] == 0.5f, "%s",
          nst_fail_message());
    CHECK(spec.deepest == nst_vgg_find("relu4_2"), "deepest layer %d", spec.deepest);
    /* required keys, format, exclusive size keys */
    CHECK(parse(&c, "[style]\npath = s.png\n") == NST_OK, "%s", nst_fail_message());
    nst_fail_clear();
    CHECK(nst_job_check(&c, &spec, &out) == NST_EINPUT && strstr(nst_fail_message(), "content.path is not set"), "%s",
          nst_fail_message());
    CHECK(parse(&c, "[content]\npath = a.png\n[style]\npath = s.png\n[output]\npath = o.bmp\n") == NST_OK, "%s", nst_fail_message());
    nst_fail_clear();
    CHECK(nst_job_check(&c, &spec, &out) == NST_EINPUT && strstr(nst_fail_message(), "t.ini:6") &&
              strstr(nst_fail_message(), ".tif, .tiff, .h5, .hdf5, .png"),
          "%s", nst_fail_message());
    CHECK(parse(&c, "[content]\npath = a.png\n[style]\npath = s.png\n[output]\npath = o.png\nsize = 10\nwidth = 5\n") == NST_OK, "%s", nst_fail_message());
    nst_fail_clear();
    CHECK(nst_job_check(&c, &spec, &out) == NST_EINPUT && strstr(nst_fail_message(), "cannot be combined"), "%s",
          nst_fail_message());
}

static void t_cli(void)
{
    nst_cli cli;
    char *ok[] = {"nstbatch", "--set", "optim.lr=0.1", "c.ini", "--set=run.seed=3", "-q"};
    CHECK(nst_cli_parse(6, ok, &cli) == NST_OK, "%s", nst_fail_message());
    CHECK(cli.nsets == 2 && strcmp(cli.sets[1], "run.seed=3") == 0 && cli.quiet && strcmp(cli.config_path, "c.ini") == 0,
          "parsed wrong");
    char *bad[] = {"nstbatch", "--sett", "x"};
    nst_fail_clear();
    CHECK(nst_cli_parse(3, bad, &cli) == NST_EINPUT && strstr(nst_fail_message(), "did you mean '--set'"), "%s",
          nst_fail_message());
    char *two[] = {"nstbatch", "a.ini", "b.ini"};
    nst_fail_clear();
    CHECK(nst_cli_parse(3, two, &cli) == NST_EINPUT && strstr(nst_fail_message(), "more than one config"), "%s",
          nst_fail_message());
    char *mw[] = {"nstbatch", "--make-weights", "random", "o.h5", "--width-divisor", "3"};
    nst_fail_clear();
    CHECK(nst_cli_parse(6, mw, &cli) == NST_EINPUT && strstr(nst_fail_message(), "1, 2, 4, 8"), "%s", nst_fail_message());
    char *mk[] = {"nstbatch", "--make-weights", "pretrained", "o.h5"};
    nst_fail_clear();
    CHECK(nst_cli_parse(4, mk, &cli) == NST_EINPUT && strstr(nst_fail_message(), "valid: random"), "%s", nst_fail_message());
}

int main(void)
{
    RUN(t_defaults_are_valid);
    RUN(t_parses_a_full_file);
    RUN(t_every_error_names_line_key_and_valid_values);
    RUN(t_set_overrides_the_file_and_is_validated);
    RUN(t_relative_paths_follow_the_config_file);
    RUN(t_printed_config_parses_back_identically);
    RUN(t_help_lists_every_key);
    RUN(t_semantic_checks_name_the_line);
    RUN(t_cli);
    return test_report("test_config");
}
