/* io/ckpt_file.h: one rank's checkpoint file: named binary records with a checksum.
 *
 *   "NSTCKPT1" | records | "NSTCKEND" | u64 checksum of everything before it
 *   record = u32 name length | name | pad | u64 byte count | bytes | pad (pads: zeros to 8 bytes,
 *            so that every record's data is 8-byte aligned in the mapped file)
 *
 * The writer streams records to a temporary file in the target's directory; commit appends the
 * checksum, fsyncs and renames it to its final name (the caller syncs the directory once for all
 * of a checkpoint's files). The reader maps the file, checks the magic, the trailer and the
 * checksum before anything is used, and finds records by name: a torn or altered file is refused
 * with its name, never half-read. Numbers are in this machine's byte order (a checkpoint resumes
 * on the cluster that wrote it). */
#ifndef NST_CKPT_FILE_H
#define NST_CKPT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "../util/status.h"

typedef struct nst_ckpt_writer nst_ckpt_writer;

nst_status nst_ckpt_writer_open(const char *path, nst_ckpt_writer **out);
nst_status nst_ckpt_put(nst_ckpt_writer *w, const char *name, const void *data, size_t bytes);
/* Checksum, fsync, rename to the final name; frees w whatever happens. */
nst_status nst_ckpt_writer_commit(nst_ckpt_writer *w);
/* Remove the temporary file; frees w (NULL is fine). */
void nst_ckpt_writer_abort(nst_ckpt_writer *w);

typedef struct nst_ckpt_reader nst_ckpt_reader;

nst_status nst_ckpt_reader_open(const char *path, nst_ckpt_reader **out);
/* The record `name` must exist with exactly `bytes` bytes; copied to dst. */
nst_status nst_ckpt_get(const nst_ckpt_reader *r, const char *name, void *dst, size_t bytes);
/* The record's bytes in place (valid until close), or NULL with an error naming the file. */
const void *nst_ckpt_find(const nst_ckpt_reader *r, const char *name, size_t *bytes);
void nst_ckpt_reader_close(nst_ckpt_reader *r);

/* The checksum used (also for config hashes): 64-bit, four multiply-rotate lanes, fast enough
 * not to matter next to the disk. */
uint64_t nst_hash64(const void *data, size_t n, uint64_t seed);

/* fsync a directory (after renames into it). */
nst_status nst_sync_dir(const char *dir);

#endif
