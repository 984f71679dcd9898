/* main.c: nstbatch's entry point. Parses the command line, answers --help, --version,
 * --print-config and --make-weights without MPI, otherwise starts MPI, lets rank 0 resolve and
 * validate the config (and a batch's jobs), broadcasts it, loads the network once, runs the job
 * or the batch (or --self-test's checks, nst/run/selftest.h), and maps the outcome to the exit status
 * (0 done, 2 bad input, 1 runtime failure or a failed self-test; 75 checkpointed on a signal; a
 * batch: the first failed job's). Only rank 0 prints; all ranks stop together. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/config/config.h"
#include "io/versions.h"
#include "kernels/backend.h"
#include "kernels/cuda/cuda.h"
#include "mpi/comm.h"
#include "mpi/watchdog.h"
#include "nst/run/cli.h"
#include "io/config/jobs.h"
#include "video/clip.h"
#include "video/setup.h"
#include "nst/run/batch.h"
#include "nst/state/checkpoint.h"
#include "nst/run/device.h"
#include "nst/report/progress.h"
#include "nst/run/job.h"
#include "nst/inputs/style_cache.h"
#include "nst/model/random_vgg.h"
#include "nst/run/selftest.h"
#include "io/atomic_file.h"
#include "util/log.h"
#include "util/mem.h"
#include "util/signals.h"
#include "util/version.h"


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
    if (nst_log_is_root() && s == NST_EINTERRUPTED)
        fprintf(stderr, "nstbatch: %s\n", nst_fail_message()); /* not an error: checkpointed, requeue me */
    else if (nst_log_is_root())
        nst_print_error(nst_fail_message());
    return nst_exit_code(s);
}

/* A device fault (kernels/backend.h: a failed CUDA, cuDNN or cuBLAS call, or its CPU test hook
 * NSTBATCH_DEVICE_FAULT) ends the job: the failed rank cannot go on, and its peers may be waiting
 * for it in a collective, where they would hang until the wall-clock limit without a word. */
static void device_fault(const char *msg)
{
    char line[1024];
    snprintf(line, sizeof line, "device fault: %s; aborting every rank", msg);
    nst_comm_abort(1, line); /* "nstbatch: error: rank R (host): device fault: ..." */
}

/* The world MPI started against what the launcher asked for: --expect-ranks N, and the srun
 * singleton trap (open-mpi/ompi #13523): srun without a working PMI starts N processes that each
 * see a world of one. Every singleton is its own rank 0, so only the launcher's task 0 speaks. */
static nst_status check_world(const nst_cli *cli, int size, int launched_as)
{
    const char *step = getenv("SLURM_STEP_NUM_TASKS");
    int srun_tasks = step && *step ? atoi(step) : 0;
    if (size == 1 && srun_tasks > 1 && !getenv("OMPI_COMM_WORLD_SIZE")) {
        nst_log_set_rank(launched_as);
        return nst_fail(NST_EINPUT, "srun started %d tasks but MPI sees a world of 1 in each (singletons: no PMI connection); launch with "
                        "srun --mpi=pmix (see srun --mpi=list) or with mpirun inside the allocation", srun_tasks);
    }
    if (cli->expect_ranks && cli->expect_ranks != size) {
        if (size == 1) nst_log_set_rank(launched_as);
        return nst_fail(NST_EINPUT, "--expect-ranks %d: MPI started %d rank%s; check the launcher (srun --mpi=pmix, or mpirun -np %d)", cli->expect_ranks,
                        size, size == 1 ? "" : "s", cli->expect_ranks);
    }
    return NST_OK;
}

/* The config file (its [job.NAME] sections to jobs), --set, then batch.manifest's jobs. */
static nst_status load_config(const nst_cli *cli, nst_config *cfg, nst_jobset *jobs)
{
    nst_config_defaults(cfg);
    if (cli->config_path) NST_TRY(nst_config_load_file(cfg, jobs, cli->config_path));
    for (int i = 0; i < cli->nsets; i++) NST_TRY(nst_config_set(cfg, cli->sets[i]));
    if (cfg->batch_manifest[0])
        NST_TRY(nst_jobset_read_manifest(jobs, cfg->batch_manifest, nst_config_origin(cfg, NST_K_batch_manifest)));
    return NST_OK;
}

/* Rank 0's job list to every rank. Collective. */
static nst_status share_jobs(nst_jobset *jobs)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    nst_status s = nst_comm_rank() == 0 ? nst_jobset_pack(jobs, &buf, &len) : NST_OK;
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast_alloc(&buf, &len, 0);
    if (s == NST_OK && nst_comm_rank() != 0) s = nst_jobset_unpack(jobs, buf, len);
    if (nst_comm_rank() == 0)
        free(buf);
    else
        nst_free(buf);
    return nst_comm_agree(s);
}

static void print_version(FILE *f)
{
    char io[256], mpi[256], nccl[128], why[256];
    nst_io_versions(io, sizeof io);
    nst_comm_library_version(mpi, sizeof mpi);
    nst_comm_nccl_version(nccl, sizeof nccl);
    int n = nst_cuda_probe(why, sizeof why);
    fprintf(f, "nstbatch %s\n", NST_VERSION);
    fprintf(f, "  compute: CPU backend (oneDNN)%s; %s\n", nst_cuda_has_ops() ? " and CUDA backend (cuDNN, cuBLAS)" : "", nst_cuda_build_info());
    fprintf(f, "  GPUs visible now: %d%s%s\n", n, n ? "" : " - ", n ? "" : why);
    fprintf(f, "  files:   %s\n", io);
    fprintf(f, "  MPI:     %s; %s\n", mpi, nccl);
}

/* --self-test on every rank: the version text and the command line go into its report. */
static nst_status self_test(const nst_cli *cli, const nst_config *cfg, int threads, int argc, char **argv, int *failed)
{
    char versions[2048] = "", command[2048] = "";
    FILE *f = fmemopen(versions, sizeof versions - 1, "w");
    if (f) print_version(f), fclose(f);
    for (int i = 0, n = 0; i < argc && n < (int)sizeof command - 1; i++)
        n += snprintf(command + n, sizeof command - (size_t)n, "%s%s", i ? " " : "", argv[i]);
    nst_status s = nst_comm_rank() == 0 && cli->report ? nst_atomic_check_target(cli->report, 1) : NST_OK;
    NST_TRY(nst_comm_agree(s)); /* a report that cannot be written is refused before the checks run */
    nst_selftest_opts o = {cli->report, versions, command, threads, device_fault};
    return nst_selftest_run(cfg, &o, failed);
}

static int make_weights(const nst_cli *cli)
{
    if (!cli->force && access(cli->mw_out, F_OK) == 0) /* output.overwrite is not the key here: --force is */
        return fail_exit(nst_fail(NST_EINPUT, "--make-weights: %s exists; add --force to replace it", cli->mw_out));
    nst_weights w;
    nst_status s = nst_weights_random(&w, (uint64_t)cli->mw_seed, cli->mw_divisor);
    if (s == NST_OK) s = nst_weights_write(cli->mw_out, &w, cli->force);
    if (s == NST_OK)
        printf("wrote %s: %s, hash %016llx\n", cli->mw_out, w.description, (unsigned long long)nst_weights_hash(&w));
    nst_weights_free(&w);
    return s == NST_OK ? 0 : fail_exit(s);
}

/* The answers given without MPI: --help, --version, --make-weights, --print-config, and the
 * refusal of a missing config. 1 with *code set when one was given. */
static int answer_without_mpi(const nst_cli *cli, int *code)
{
    *code = 0;
    if (cli->help) {
        if (nst_log_is_root()) nst_cli_help(stdout);
        return 1;
    }
    if (cli->version) {
        if (nst_log_is_root()) print_version(stdout);
        return 1;
    }
    if (cli->make_weights) {
        *code = nst_log_is_root() ? make_weights(cli) : 0;
        return 1;
    }
    if (cli->print_config) {
        nst_config cfg;
        nst_jobset jobs;
        nst_jobset_init(&jobs);
        nst_status s = load_config(cli, &cfg, &jobs);
        if (s == NST_OK && nst_log_is_root()) {
            char cwd[4096]; /* relative paths are relative to it: written absolute, the copy moves */
            const char *here = getcwd(cwd, sizeof cwd);
            nst_config_write(&cfg, stdout, here);
            nst_jobset_write(&jobs, stdout, here);
        }
        nst_jobset_free(&jobs);
        *code = s == NST_OK ? 0 : fail_exit(s);
        return 1;
    }
    if (!cli->config_path && cli->nsets == 0 && !cli->self_test) {
        *code = fail_exit(nst_fail(NST_EINPUT, "no config file given; usage: nstbatch [options] CONFIG.ini (see --help)"));
        return 1;
    }
    return 0;
}

/* Rank 0 resolves the config and the jobs and every rank receives them. Collective. */
static nst_status share_config(const nst_cli *cli, nst_config *cfg, nst_jobset *jobs)
{
    nst_status s = nst_comm_rank() == 0 ? load_config(cli, cfg, jobs) : NST_OK;
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(cfg, sizeof *cfg, 0);
    if (s == NST_OK) s = share_jobs(jobs);
    if (s == NST_OK) s = nst_comm_agree(nst_comm_rank() == 0 ? nst_batch_check_restart(jobs, cli->restart_jobs) : NST_OK);
    return s;
}

/* The run's first lines: the backend and why, the Gram path, and a rank its launcher bound to
 * fewer cores than its share (launched: started by mpirun or srun, not a singleton). */
static void announce(const nst_config *cfg, const nst_device *dev, int launched)
{
    const nst_backend *be = dev->be;
    const int size = nst_comm_size();
    nst_info("nstbatch %s: %d rank%s; backend: %s%s%s%s\n", NST_VERSION, size, size == 1 ? "" : "s", be->description,
             be->choice[0] ? " (" : "", be->choice, be->choice[0] ? ")" : "");
    if (size > 1) nst_info("         Gram sums: %s\n", dev->gram_path);
    char hosts[1024];
    int nhosts = nst_comm_hosts(hosts, sizeof hosts);
    if (nhosts > 1) nst_info("         hosts: %d: %s\n", nhosts, hosts);
    /* mpirun binds each rank to one core by default for small rank counts, and OpenMP sizes
     * its pool from that mask: say so when a rank gets less than its share of the cores its
     * launcher (the parent process) was given; a mask the user set binds the launcher too, and
     * a singleton's mask is the user's alone (taskset nstbatch: its parent is the shell). */
    int share = be->cores_launcher / (nst_comm_local_size() > 0 ? nst_comm_local_size() : 1);
    if (launched && !be->gpu_stream && cfg->run_threads == 0 && be->cores_allowed < share)
        nst_warn("the launcher bound this rank to %d of the %d cores it was given, so the CPU backend uses %d thread%s; "
                 "launch with mpirun --bind-to none (one rank per node) or --map-by slot:PE=N, or set run.threads\n",
                 be->cores_allowed, be->cores_launcher, be->threads, be->threads == 1 ? "" : "s");
}

/* The job, or the batch of jobs, on an open device: progress, the network and the style cache
 * shared by every job. Collective. */
static nst_status run_jobs(const nst_cli *cli, const nst_config *cfg, const nst_jobset *jobs, nst_device *dev, int launched)
{
    nst_backend *be = dev->be;
    nst_collectives coll = nst_device_collectives(dev);
    nst_progress progress;
    nst_status s = nst_progress_open(&progress, cfg, cli->quiet, launched, be->gpu_stream ? be->gpu_bus_id : "");
    nst_weights weights;
    nst_style_cache *cache = NULL;
    memset(&weights, 0, sizeof weights);
    if (s == NST_OK) s = nst_job_weights(cfg, &weights);
    if (s == NST_OK) s = nst_comm_agree(nst_style_cache_open(cfg->batch_style_cache, &cache));
    if (s == NST_OK) {
        nst_job_env env = {&weights, cache, cfg->checkpoint_path, cli->restart, &progress, "", cli->dry_run};
        if (jobs->njobs == 0 && nst_clip_wanted(cfg)) {
            nst_clip_env cenv = {&weights, cache, &progress, cli->restart};
            s = cli->dry_run ? nst_fail(NST_EINPUT, "--dry-run plans still images; a clip (content.path %s) has no dry run", cfg->content_path)
                             : nst_clip_run(cfg, be, coll, &cenv);
        } else if (jobs->njobs > 0) {
            nst_batch batch = {cfg, jobs, (const char *const *)cli->sets, cli->nsets, cli->restart, cli->restart_jobs};
            s = nst_batch_run(&batch, be, coll, &env);
        } else {
            nst_job_result res;
            s = nst_job_run(cfg, be, coll, &env, &res);
        }
    }
    nst_style_cache_free(cache);
    nst_weights_free(&weights);
    nst_progress_close(&progress);
    return s;
}

/* Rank 0's exit status (the launcher's rank 0 before MPI starts) into NSTBATCH_END_MARK, a file
 * slurm/launch.sh names in the checkpoint folder, beside the manifest rank 0 writes: the wrapper
 * can then tell a step whose ranks ran from one whose launcher reported 0 without starting any
 * (srun does, when its tasks fail to launch). Written whole (io/atomic_file.h); a failure to
 * write it is said, as the wrapper will then fail the job. */
static void mark_end(int code)
{
    const char *path = getenv("NSTBATCH_END_MARK");
    if (!path || !*path || !nst_log_is_root()) return;
    char text[16];
    snprintf(text, sizeof text, "%d\n", code);
    if (nst_atomic_write_text(path, text) != NST_OK) {
        nst_warn("cannot write NSTBATCH_END_MARK (%s) for slurm/launch.sh: %s\n", path, nst_fail_message());
        nst_fail_clear();
    }
}

/* The exit status after MPI: every rank agrees, rank 0 prints and marks it, MPI ends. */
static int finish(nst_status s)
{
    s = nst_comm_agree(s);
    int code = s == NST_OK ? 0 : fail_exit(s);
    mark_end(code);
    nst_comm_finalize();
    return code;
}

int main(int argc, char **argv)
{
    nst_cli cli;
    nst_log_set_rank(launch_rank());
    nst_status s = nst_cli_parse(argc, argv, &cli);
    if (s != NST_OK) return fail_exit(s);
    int code;
    if (answer_without_mpi(&cli, &code)) {
        mark_end(code);
        return code;
    }
    nst_log_set_quiet(cli.quiet);

    const int launched_as = launch_rank();
    /* before MPI starts: a singleton's start sets PMIX_RANK as a launcher would */
    const int launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") || getenv("SLURM_STEP_ID");
    /* a stop signal from the launcher as the ranks start (Slurm's --signal can come at any time)
     * is recorded, not the default action's end of the rank; and again after MPI_Init, in case it
     * took them: SIGUSR1, SIGTERM and SIGHUP are ours, SIGPIPE ignored */
    nst_signals_install();
    s = nst_comm_init(&argc, &argv);
    if (s != NST_OK) return fail_exit(s);
    nst_log_set_rank(nst_comm_rank());
    nst_signals_install();
    /* from the ranks' first exchange (bounded in nst_comm_init) to the end, the stall watchdog
     * watches every phase: render loops by their iterations, the rest by MPI's waits */
    nst_watchdog_phase("setup", "in the set-up (config, device, weights, inputs, style targets)", 0);
    s = check_world(&cli, nst_comm_size(), launched_as);
    if (s != NST_OK) {
        code = fail_exit(s);
        mark_end(code);
        nst_comm_finalize();
        return code;
    }
    nst_config cfg;
    nst_jobset jobs;
    nst_jobset_init(&jobs);
    s = share_config(&cli, &cfg, &jobs);
    if (s == NST_OK) nst_watchdog_setting(cfg.run_stall_timeout == NST_WORD(0) ? 0 : (double)cfg.run_stall_timeout);
    int threads = cfg.run_threads ? (int)cfg.run_threads : nst_default_threads(nst_comm_local_size());
    if (s == NST_OK && cli.self_test) {
        int failed = 0;
        nst_watchdog_phase("selftest", "in the self-test", 1);
        nst_watchdog_saved("the self-test writes nothing that a run again would resume");
        s = self_test(&cli, &cfg, threads, argc, argv, &failed);
        nst_jobset_free(&jobs);
        code = s != NST_OK ? fail_exit(s) : failed ? 1 : 0;
        mark_end(code);
        nst_comm_finalize();
        return code;
    }
    nst_device dev;
    memset(&dev, 0, sizeof dev);
    if (s == NST_OK) s = nst_device_open(&cfg, threads, &dev);
    s = nst_comm_agree(s);
    if (s == NST_OK) {
        /* from here a device fault aborts every rank; while devices opened the ranks agreed instead */
        nst_backend_set_fatal_handler(device_fault);
        announce(&cfg, &dev, launched);
        nst_ckpt_arithmetic(dev.be->name, nst_precision_name(dev.be->precision));
        nst_signals_install_interrupt(nst_comm_rank() == 0); /* (a terminal's Ctrl-C, srun -X's: now a checkpoint can follow) */
        s = run_jobs(&cli, &cfg, &jobs, &dev, launched);
    }
    nst_backend_set_fatal_handler(NULL); /* MPI ends below */
    nst_device_close(&dev);
    nst_jobset_free(&jobs);
    return finish(s);
}
