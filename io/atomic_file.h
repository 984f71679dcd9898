/* io/atomic_file.h: nothing half-written under a final name.
 *
 * A file is written under a temporary name in the same directory (".NAME.nstbatch-PID.tmp"),
 * then synced, renamed over the final name and the directory synced. A failed or killed run
 * leaves at most the temporary file, never a partial file under the final name, and an existing
 * file is replaced only when `overwrite` is set.
 */
#ifndef NST_ATOMIC_FILE_H
#define NST_ATOMIC_FILE_H

#include "../util/status.h"

typedef struct {
    char final_path[4096];
    char tmp[4200];
} nst_atomic_file;

/* Check, before any long computation, that `path` may be written: its directory exists and is
 * writable, and the file does not exist unless overwrite is set. */
nst_status nst_atomic_check_target(const char *path, int overwrite);
/* Choose and create the temporary file (empty) for `path`. */
nst_status nst_atomic_begin(nst_atomic_file *af, const char *path, int overwrite);
/* fsync the temporary, rename it to the final name, fsync the directory. */
nst_status nst_atomic_commit(nst_atomic_file *af);
/* Remove the temporary file. */
void nst_atomic_abort(nst_atomic_file *af);
/* Write a whole text file that way (replacing an existing one). */
nst_status nst_atomic_write_text(const char *path, const char *text);

/* A directory the same way (a Deep Zoom tile folder, the viewer's assets): built under
 * ".NAME.nstbatch-PID.tmp", its files synced with the file system (syncfs) and renamed into
 * place. An existing directory of that name (only with overwrite) is exchanged with it in one
 * step where the file system can (renameat2 RENAME_EXCHANGE), else renamed aside first; then it
 * is removed. A file in the way is refused. */
nst_status nst_atomic_dir_check_target(const char *path, int overwrite);
nst_status nst_atomic_dir_begin(nst_atomic_file *af, const char *path, int overwrite);
nst_status nst_atomic_dir_commit(nst_atomic_file *af);
void nst_atomic_dir_abort(nst_atomic_file *af);
/* Remove a directory tree (no symbolic link is followed); 0 or -1 with errno. */
int nst_remove_tree(const char *path);

#endif
