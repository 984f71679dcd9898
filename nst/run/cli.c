/* nst/run/cli.c: command-line parsing and the --help text (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/config/config.h"
#include "../../util/text.h"

static const char *options[] = {"--set", "--print-config", "--help", "--version", "--quiet", "--make-weights",
                                "--seed", "--width-divisor", "--force", "--restart", "--expect-ranks", "--dry-run",
                                "--self-test", "--report"};

static nst_status parse_int(const char *opt, const char *v, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi)
        return nst_fail(NST_EINPUT, "%s '%s': expected an integer in %lld..%lld", opt, v, lo, hi);
    *out = x;
    return NST_OK;
}

/* Value of an option given as "--opt VALUE" or "--opt=VALUE". */
static nst_status option_value(int argc, char **argv, int *i, const char *opt, const char **val)
{
    size_t n = strlen(opt);
    if (argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return NST_OK;
    }
    if (*i + 1 >= argc) return nst_fail(NST_EINPUT, "%s needs a value (see --help)", opt);
    *val = argv[++*i];
    return NST_OK;
}

static int is_opt(const char *arg, const char *opt)
{
    size_t n = strlen(opt);
    return strncmp(arg, opt, n) == 0 && (arg[n] == 0 || arg[n] == '=');
}

/* A flag without a value: set in cli, 1; 0 when a is none. */
static int flag_option(const char *a, nst_cli *cli)
{
    if (strcmp(a, "--print-config") == 0)
        cli->print_config = 1;
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
        cli->help = 1;
    else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0)
        cli->version = 1;
    else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0)
        cli->quiet = 1;
    else if (strcmp(a, "--dry-run") == 0)
        cli->dry_run = 1;
    else if (strcmp(a, "--self-test") == 0)
        cli->self_test = 1;
    else if (strcmp(a, "--force") == 0)
        cli->force = 1;
    else if (strcmp(a, "--restart") == 0)
        cli->restart = 1;
    else
        return 0;
    return 1;
}

/* An option with a value: --set, --report, --restart=JOBS, --expect-ranks (*used: 0 when
 * argv[*i] is none of them). */
static nst_status value_option(int argc, char **argv, int *i, nst_cli *cli, int *used)
{
    const char *a = argv[*i], *v = NULL;
    *used = 1;
    if (is_opt(a, "--set")) {
        NST_TRY(option_value(argc, argv, i, "--set", &v));
        if (cli->nsets == NST_CLI_MAX_SETS) return nst_fail(NST_EINPUT, "more than %d --set options", NST_CLI_MAX_SETS);
        cli->sets[cli->nsets++] = v;
    } else if (is_opt(a, "--report")) {
        NST_TRY(option_value(argc, argv, i, "--report", &cli->report));
        if (!*cli->report) return nst_fail(NST_EINPUT, "--report needs a file name: --self-test --report FILE");
    } else if (strncmp(a, "--restart=", 10) == 0) {
        if (!a[10]) return nst_fail(NST_EINPUT, "--restart=: name the jobs to start over (--restart=JOB[,JOB...]), or --restart for all");
        cli->restart_jobs = a + 10;
    } else if (is_opt(a, "--expect-ranks")) {
        long long n = 0;
        NST_TRY(option_value(argc, argv, i, "--expect-ranks", &v));
        NST_TRY(parse_int("--expect-ranks", v, 1, 1000000, &n));
        cli->expect_ranks = (int)n;
    } else {
        *used = 0;
    }
    return NST_OK;
}

/* --make-weights KIND OUT.h5 and its --seed and --width-divisor (*used: 0 when argv[*i] is none
 * of them; given: bit 0 --seed, bit 1 --width-divisor). */
static nst_status make_weights_option(int argc, char **argv, int *i, nst_cli *cli, int *used, int *given)
{
    const char *a = argv[*i], *v = NULL;
    *used = 1;
    if (strcmp(a, "--make-weights") == 0) {
        if (*i + 2 >= argc) return nst_fail(NST_EINPUT, "--make-weights needs KIND and OUT.h5: --make-weights random OUT.h5");
        cli->make_weights = 1;
        cli->mw_kind = argv[++*i];
        cli->mw_out = argv[++*i];
        if (strcmp(cli->mw_kind, "random") != 0)
            return nst_fail(NST_EINPUT, "--make-weights '%s': unknown kind; valid: random", cli->mw_kind);
    } else if (is_opt(a, "--seed")) {
        NST_TRY(option_value(argc, argv, i, "--seed", &v));
        NST_TRY(parse_int("--seed", v, 0, 4611686018427387904LL, &cli->mw_seed));
        *given |= 1;
    } else if (is_opt(a, "--width-divisor")) {
        long long d = 0;
        NST_TRY(option_value(argc, argv, i, "--width-divisor", &v));
        NST_TRY(parse_int("--width-divisor", v, 1, 64, &d));
        if (d & (d - 1)) return nst_fail(NST_EINPUT, "--width-divisor %lld: expected 1, 2, 4, 8, 16, 32 or 64", d);
        cli->mw_divisor = (int)d;
        *given |= 2;
    } else {
        *used = 0;
    }
    return NST_OK;
}

/* Anything else: an unknown option (with the nearest known one), or the config file. */
static nst_status other_argument(const char *a, nst_cli *cli)
{
    if (a[0] == '-' && a[1]) {
        char typed[64];
        snprintf(typed, sizeof typed, "%.*s", (int)strcspn(a, "="), a);
        const char *best = nst_nearest(typed, options, sizeof options / sizeof *options);
        return nst_fail(NST_EINPUT, "unknown option '%s'%s%s%s; see --help", a, best ? " (did you mean '" : "",
                        best ? best : "", best ? "'?)" : "");
    }
    if (cli->config_path)
        return nst_fail(NST_EINPUT, "more than one config file ('%s' and '%s'); use --set for overrides",
                        cli->config_path, a);
    cli->config_path = a;
    return NST_OK;
}

nst_status nst_cli_parse(int argc, char **argv, nst_cli *cli)
{
    memset(cli, 0, sizeof *cli);
    cli->mw_seed = 1;
    cli->mw_divisor = 1;
    int given = 0; /* --seed, --width-divisor */
    for (int i = 1; i < argc; i++) {
        int used = flag_option(argv[i], cli);
        if (!used) NST_TRY(value_option(argc, argv, &i, cli, &used));
        if (!used) NST_TRY(make_weights_option(argc, argv, &i, cli, &used, &given));
        if (!used) NST_TRY(other_argument(argv[i], cli));
    }
    if (given && !cli->make_weights)
        return nst_fail(NST_EINPUT, "--seed and --width-divisor belong to --make-weights; for the renderer use "
                                    "--set model.random_seed=N or --set model.random_width_divisor=N");
    if (cli->report && !cli->self_test)
        return nst_fail(NST_EINPUT, "--report FILE belongs to --self-test: nstbatch --self-test --report FILE");
    if (cli->self_test && (cli->dry_run || cli->make_weights || cli->print_config))
        return nst_fail(NST_EINPUT, "--self-test renders nothing: it takes no --dry-run, --make-weights or --print-config");
    if (cli->make_weights && (cli->config_path || cli->nsets || cli->print_config))
        return nst_fail(NST_EINPUT, "--make-weights takes no config file, --set or --print-config");
    return NST_OK;
}

void nst_cli_help(FILE *f)
{
    fprintf(f,
            "usage: nstbatch [options] CONFIG.ini\n"
            "       mpirun -np N nstbatch [options] CONFIG.ini\n"
            "       nstbatch --make-weights random OUT.h5 [--seed N] [--width-divisor N] [--force]\n"
            "       [mpirun -np N] nstbatch --self-test [--report FILE] [CONFIG.ini] [--set ...]\n"
            "\n"
            "Gatys neural style transfer (VGG-19, Gram style loss, content loss, TV) of CONFIG's content\n"
            "image in the style of its style image.\n"
            "\n"
            "options:\n"
            "  --set SECTION.KEY=VALUE  override a config key (repeatable; applied after the file)\n"
            "  --print-config           print the resolved configuration as INI and exit\n"
            "  --quiet, -q              no progress output (errors and notices still go to stderr)\n"
            "  --restart                do not resume the checkpoint in checkpoint.path: start over\n"
            "  --restart=JOB[,JOB...]   the same for these jobs of a batch only\n"
            "  --dry-run                print every level's plan, its memory and a time estimate calibrated here, and the\n"
            "                           output files; render and write nothing\n"
            "  --expect-ranks N         refuse to run unless MPI started N ranks (the Slurm templates pass\n"
            "                           $SLURM_NTASKS: a launcher without PMI starts N singletons)\n"
            "  --self-test              check this machine first: every op of the device's backend in each precision\n"
            "                           against the CPU in fp32, a render's first objective on tiles and against the CPU,\n"
            "                           and (under mpirun) the Gram allreduce; prints a table, exits 1 if anything fails\n"
            "                           (a 60 s budget; what it leaves out is named). CONFIG and --set choose run.device,\n"
            "                           run.threads, gpu.* as for a render\n"
            "  --report FILE            with --self-test: also write versions, devices and failing rows to FILE\n"
            "  --version, -V            version and the libraries this build uses\n"
            "  --help, -h               this text\n"
            "  --make-weights random OUT.h5\n"
            "                           write a seeded random VGG-19 in the nstbatch layout\n"
            "    --seed N               its seed (default 1)\n"
            "    --width-divisor N      divide every layer's width by N: 1, 2, 4, 8, 16, 32, 64 (default 1)\n"
            "    --force                replace OUT.h5 if it exists\n"
            "\n"
            "exit status: 0 done; 2 bad input (config, flags, images, weights); 1 runtime failure;\n"
            "75 stopped by SIGUSR1/SIGTERM/SIGHUP (or Ctrl-C, without mpirun or under srun -X) after\n"
            "writing a checkpoint (requeue the job, or run it again, to resume; a second Ctrl-C, a second\n"
            "later, stops at once).\n"
            "Relative paths in a config file are relative to that file's directory.\n"
            "\n"
            "configuration keys ([section] key = value in CONFIG.ini, or --set section.key=value):\n");
    nst_config_help(f);
}
