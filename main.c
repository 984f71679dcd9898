/* main.c: nstbatch's entry point. Parses the command line, answers --help, --version,
 * --print-config and --make-weights without MPI, otherwise starts MPI, lets rank 0 resolve and
 * validate the config, broadcasts it, runs the job, and maps the outcome to the exit status
 * (0 done, 2 bad input, 1 runtime failure). Only rank 0 prints; all ranks stop together. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/config.h"
#include "io/versions.h"
#include "kernels/backend.h"
#include "kernels/cuda/cuda.h"
#include "mpi/comm.h"
#include "nst/cli.h"
#include "nst/job.h"
#include "nst/random_vgg.h"
#include "util/log.h"

#ifndef NST_VERSION
#define NST_VERSION "0.1.0"
#endif

/* The rank a launcher gave this process, readable before MPI_Init (0 when run alone), so that
 * the answers given without MPI are printed once. */
static int launch_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return 0;
}

static int fail_exit(nst_status s)
{
    if (nst_log_is_root()) nst_print_error(nst_fail_message());
    return nst_exit_code(s);
}

static nst_status load_config(const nst_cli *cli, nst_config *cfg)
{
    nst_config_defaults(cfg);
    if (cli->config_path) NST_TRY(nst_config_load_file(cfg, cli->config_path));
    for (int i = 0; i < cli->nsets; i++) NST_TRY(nst_config_set(cfg, cli->sets[i]));
    return NST_OK;
}

static void print_version(void)
{
    char io[256], mpi[256], why[256];
    nst_io_versions(io, sizeof io);
    nst_comm_library_version(mpi, sizeof mpi);
    int n = nst_cuda_probe(why, sizeof why);
    printf("nstbatch %s\n", NST_VERSION);
    printf("  compute: CPU backend (oneDNN); %s\n", nst_cuda_build_info());
    printf("  GPUs visible now: %d%s%s\n", n, n ? "" : " - ", n ? "" : why);
    printf("  files:   %s\n", io);
    printf("  MPI:     %s\n", mpi);
}

static int make_weights(const nst_cli *cli)
{
    nst_weights w;
    nst_status s = nst_weights_random(&w, (uint64_t)cli->mw_seed, cli->mw_divisor);
    if (s == NST_OK) s = nst_weights_write(cli->mw_out, &w, cli->force);
    if (s == NST_OK)
        printf("wrote %s: %s, hash %016llx\n", cli->mw_out, w.description, (unsigned long long)nst_weights_hash(&w));
    nst_weights_free(&w);
    if (s == NST_EINPUT && strstr(nst_fail_message(), "output exists"))
        fprintf(stderr, "nstbatch: use --force to replace it\n");
    return s == NST_OK ? 0 : fail_exit(s);
}

static nst_status reducer_floats(void *ctx, float *buf, size_t n)
{
    (void)ctx;
    return nst_comm_sum_floats(buf, n);
}

static nst_status reducer_doubles(void *ctx, double *buf, size_t n)
{
    (void)ctx;
    return nst_comm_sum_doubles(buf, n);
}

static void print_summary(const nst_config *cfg, const nst_job_result *r)
{
    const nst_render_stats *st = &r->stats;
    double mp = (double)r->width * r->height / 1e6;
    if (st->iterations > 0)
        nst_info("done: %lld iterations in %.2f s (%.4f s/iteration, %.3f megapixel-iterations/s); setup %.2f s\n",
                 st->iterations, st->seconds, st->seconds / (double)st->iterations,
                 mp * (double)st->iterations / st->seconds, st->setup_seconds);
    if (st->first.style > 0)
        nst_info("style loss: %.5e -> %.5e (%.1fx lower)\n", st->first.style, st->last.style,
                 st->last.style > 0 ? st->first.style / st->last.style : 0.0);
    nst_info("wrote %s (%dx%d, %s-bit)\n", cfg->output_path, r->width, r->height, cfg->output_bits);
}

int main(int argc, char **argv)
{
    nst_cli cli;
    nst_config cfg;
    nst_log_set_rank(launch_rank());
    nst_status s = nst_cli_parse(argc, argv, &cli);
    if (s != NST_OK) return fail_exit(s);
    if (cli.help) {
        if (nst_log_is_root()) nst_cli_help(stdout);
        return 0;
    }
    if (cli.version) {
        if (nst_log_is_root()) print_version();
        return 0;
    }
    if (cli.make_weights) return nst_log_is_root() ? make_weights(&cli) : 0;
    if (cli.print_config) {
        s = load_config(&cli, &cfg);
        if (s != NST_OK) return fail_exit(s);
        if (nst_log_is_root()) nst_config_write(&cfg, stdout);
        return 0;
    }
    if (!cli.config_path && cli.nsets == 0) {
        s = nst_fail(NST_EINPUT, "no config file given; usage: nstbatch [options] CONFIG.ini (see --help)");
        return fail_exit(s);
    }
    nst_log_set_quiet(cli.quiet);

    s = nst_comm_init(&argc, &argv);
    if (s != NST_OK) return fail_exit(s);
    int rank = nst_comm_rank(), size = nst_comm_size();
    nst_log_set_rank(rank);
    if (rank == 0) s = load_config(&cli, &cfg);
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(&cfg, sizeof cfg, 0);
    if (s == NST_OK && size > 1)
        s = nst_fail(NST_EINPUT, "started on %d ranks, but this version renders on one rank; run with mpirun -np 1 "
                                 "(tile-parallel rendering over ranks is not in this version yet)", size);
    nst_backend *be = NULL;
    nst_job_result res;
    if (s == NST_OK) s = nst_backend_open(cfg.run_device, (int)cfg.run_threads, &be);
    if (s == NST_OK) {
        nst_info("nstbatch %s: %d rank%s; backend: %s%s%s%s\n", NST_VERSION, size, size == 1 ? "" : "s", be->description,
                 be->choice[0] ? " (" : "", be->choice, be->choice[0] ? ")" : "");
        /* mpirun binds each rank to one core by default for small rank counts, and OpenMP sizes
         * its pool from that mask: say so, since it silently costs most of the machine. */
        if (cfg.run_threads == 0 && be->cores_allowed < be->cores_online)
            nst_warn("MPI bound this rank to %d of %d cores, so the CPU backend uses %d thread%s; launch with "
                     "mpirun --bind-to none (one rank per node) or --map-by slot:PE=N, or set run.threads\n",
                     be->cores_allowed, be->cores_online, be->threads, be->threads == 1 ? "" : "s");
        nst_reducer red = {NULL, reducer_floats, reducer_doubles};
        s = nst_job_run(&cfg, be, red, &res);
    }
    nst_backend_close(be);
    s = nst_comm_agree(s);
    if (s == NST_OK) print_summary(&cfg, &res);
    int code = s == NST_OK ? 0 : fail_exit(s);
    nst_comm_finalize();
    return code;
}
