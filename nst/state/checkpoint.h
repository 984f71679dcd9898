/* nst/state/checkpoint.h: checkpoint and restart of a job (checkpoint.path, .every, .minutes).
 *
 * A checkpoint is one file per rank (io/ckpt_file.h: the rank's tiles' optimised pixels, the
 * optimiser state, the lagged Gram) and a manifest, written by rank 0 after every rank's file is
 * durable. Files of generation g are named g%08d-r%05d.nstc (generation, rank); the manifest names the newest
 * complete generation and is replaced atomically, so a run killed while writing leaves the
 * previous generation in force (its files are removed only after the new manifest is synced).
 * Why per-rank files and not one parallel HDF5 file: bench/results/checkpoint.md.
 *
 * The manifest also holds what a resume must match: the hash of the resolved config (less the
 * keys that cannot change the pixels: output.*, checkpoint.*, metrics.*, run.threads/.device/
 * .print_every/.memory_gb/.record) and the size and mtime of every input file, in full, so that a
 * refusal names the first line that differs; the job's rank count; the level and iteration; the
 * tile size in use (a resumed level is tiled as it was, whatever memory the new node has).
 * A finished job leaves a manifest with state = done (and no rank files): a requeued run or a
 * re-run batch skips it.
 *
 * The noise initialisation is a pure function of (run.seed, pixel): there is no RNG state.
 */
#ifndef NST_CHECKPOINT_H
#define NST_CHECKPOINT_H

#include <stdint.h>

#include "../../io/ckpt_file.h"
#include "../../io/config/config.h"
#include "../../kernels/backend.h"

#define NST_CKPT_MAX_LEVELS 16

/* A finished pyramid level, as the report needs it after a resume. */
typedef struct {
    int w, h, tiles, ranks;
    long long iterations;
    double first, last, seconds;
} nst_ckpt_level;

typedef struct nst_ckpt {
    int enabled;            /* checkpoint.path set */
    char dir[4096];
    char job[128];          /* the batch job's name ("" for a single job), for messages */
    long long every;        /* iterations, 0: off */
    double minutes;         /* 0: off */
    uint64_t hash;
    char *text;             /* what the hash covers (rank 0) */
    int job_ranks;
    long long gen;          /* the newest complete generation (0: none) */
    int file_ranks;         /* how many rank files it has */
    double last;            /* when the last checkpoint was written (or the job started) */
    int written;            /* checkpoints written by this run */
    int low_ranks, low_rank; /* the last poll: ranks short of memory, and one of them */
    size_t low_left;         /* what it had left */
    /* resume: where the newest generation stands */
    int resume, done;
    int level;
    long long iteration;
    int tile_w, tile_h;
    int nlevels;            /* finished levels, in levels[] */
    nst_ckpt_level levels[NST_CKPT_MAX_LEVELS];
    char outputs[1024];     /* done: the files the job wrote */
} nst_ckpt;

/* Collective on the job's ranks. Rank 0 reads dir/manifest: none -> a fresh start; a matching
 * one -> resume (or done); a different config, inputs or rank count -> NST_EINPUT naming the
 * difference, unless restart (--restart), which starts over (the old generation stays until the
 * first new checkpoint replaces it). dir "" disables checkpoints (signals still stop the run). */
nst_status nst_ckpt_open(nst_ckpt *c, const nst_config *cfg, const char *dir, int restart, const char *job);
/* The run's backend and resolved precision ("cpu", "bf16"), set once when the backend opens: part
 * of what a checkpoint must match (run.precision = auto resolves differently on other machines). */
void nst_ckpt_arithmetic(const char *backend, const char *precision);
void nst_ckpt_free(nst_ckpt *c);

enum { NST_CKPT_NONE = 0, NST_CKPT_DUE = 1, NST_CKPT_SIGNAL = 2, NST_CKPT_MEMORY = 3 };
/* At an iteration boundary, `done` iterations into the level: whether to checkpoint now (every N
 * iterations, every M minutes by rank 0's clock) or to checkpoint and stop (a rank was sent
 * SIGUSR1/SIGTERM; or a rank's node or memory control group has almost nothing left, before the
 * kernel's OOM killer would end the job without a word: c->low_*). One small sum over the ranks
 * (sum_doubles), so all of them answer the same. */
int nst_ckpt_poll(nst_ckpt *c, long long done, nst_status (*sum_doubles)(void *, double *, size_t), void *ctx);

/* What a render saves into and restores from its rank file. */
typedef nst_status (*nst_ckpt_save_fn)(void *ctx, nst_ckpt_writer *w);

/* Write a checkpoint: every rank of the current group its file (save fills it), then rank 0 the
 * manifest; then the previous generation is removed. Collective on the current group. */
nst_status nst_ckpt_write(nst_ckpt *c, int level, long long iteration, int tile_w, int tile_h, nst_ckpt_save_fn save, void *ctx);
/* This rank's file of the generation being resumed. */
nst_status nst_ckpt_open_rank(const nst_ckpt *c, nst_ckpt_reader **r);
/* After a level on a subgroup: the generation rank 0 knows, to every rank of the job. Collective. */
nst_status nst_ckpt_sync(nst_ckpt *c);
/* Record a finished level (the manifest keeps them for the report of a resumed run). */
void nst_ckpt_level_done(nst_ckpt *c, int k, const nst_ckpt_level *lv);
/* The job's outputs are written: the manifest says done, the rank files go. Rank 0 acts. */
nst_status nst_ckpt_finish(nst_ckpt *c, const char *outputs);

/* Rank 0 alone, no MPI: whether dir holds a finished render of this config whose outputs are all
 * still there (their names to outputs). Such a job is not rendered again. */
int nst_ckpt_is_done(const nst_config *cfg, const char *dir, char *outputs, size_t cap);

/* A rank file being written (w) or read (r): one function per module lists its state records and
 * serves both directions, so saving and restoring cannot drift apart. */
typedef struct nst_ckpt_io {
    nst_ckpt_writer *w;
    const nst_ckpt_reader *r;
    nst_backend *be;
} nst_ckpt_io;
/* Host bytes to the record, or the record (exactly `bytes` of it) back to them. */
nst_status nst_ckpt_io_host(const nst_ckpt_io *io, const char *name, void *data, size_t bytes);
/* The same for a backend buffer (staged through host memory). */
nst_status nst_ckpt_io_buffer(const nst_ckpt_io *io, const char *name, void *buf, size_t bytes);

#endif
