/* bench/checkpoint_format.c: the measurement behind the checkpoint layout (bench/results/checkpoint.md).
 *
 *   mpirun -np R build/bench/checkpoint_format DIR MB_PER_RANK REPEATS
 *
 * Every rank holds three arrays (pixels, Adam m, v) of MB_PER_RANK/3 megabytes and writes them as
 *   a) its own file through io/ckpt_file.c (records, checksum, fsync, rename) plus a manifest from
 *      rank 0: what nstbatch does;
 *   b) one parallel HDF5 file: three datasets of R x N floats, each rank its row, collective
 *      H5Dwrite over MPI-IO, closed, fsynced and renamed by rank 0;
 * and reads them back (a: mmap and checksum; b: collective H5Dread). Each step ends with a barrier;
 * the median of REPEATS is printed as one markdown row per method. Page-cache effects are included
 * (what a checkpoint costs a run); the files are removed between repeats. */
#include <fcntl.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "io/ckpt_file.h"

static double now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what)
{
    fprintf(stderr, "checkpoint_format: %s failed\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void write_files(const char *dir, int rank, float **a, size_t n)
{
    char path[4096];
    nst_ckpt_writer *w;
    snprintf(path, sizeof path, "%s/r%05d.nstc", dir, rank);
    if (nst_ckpt_writer_open(path, &w) != NST_OK) die("nst_ckpt_writer_open");
    const char *names[3] = {"x", "m", "v"};
    for (int k = 0; k < 3; k++)
        if (nst_ckpt_put(w, names[k], a[k], n * sizeof(float)) != NST_OK) die("nst_ckpt_put");
    if (nst_ckpt_writer_commit(w) != NST_OK) die("nst_ckpt_writer_commit");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        if (nst_sync_dir(dir) != NST_OK) die("nst_sync_dir");
        snprintf(path, sizeof path, "%s/manifest", dir);
        FILE *f = fopen(path, "w");
        if (!f) die("manifest");
        fprintf(f, "generation = 1\n");
        fflush(f);
        fsync(fileno(f));
        fclose(f);
        nst_sync_dir(dir);
    }
}

static void read_files(const char *dir, int rank, float **a, size_t n)
{
    char path[4096];
    nst_ckpt_reader *r;
    snprintf(path, sizeof path, "%s/r%05d.nstc", dir, rank);
    if (nst_ckpt_reader_open(path, &r) != NST_OK) die("nst_ckpt_reader_open");
    const char *names[3] = {"x", "m", "v"};
    for (int k = 0; k < 3; k++)
        if (nst_ckpt_get(r, names[k], a[k], n * sizeof(float)) != NST_OK) die("nst_ckpt_get");
    nst_ckpt_reader_close(r);
}

static void write_h5(const char *dir, int rank, int size, float **a, size_t n)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/ckpt.h5", dir);
    snprintf(tmp, sizeof tmp, "%s/ckpt.h5.tmp", dir);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (f < 0) die("H5Fcreate");
    hsize_t dims[2] = {(hsize_t)size, n}, start[2] = {(hsize_t)rank, 0}, count[2] = {1, n};
    hid_t fs = H5Screate_simple(2, dims, NULL), ms = H5Screate_simple(2, count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    const char *names[3] = {"x", "m", "v"};
    for (int k = 0; k < 3; k++) {
        hid_t d = H5Dcreate2(f, names[k], H5T_NATIVE_FLOAT, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        if (H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, dxpl, a[k]) < 0) die("H5Dwrite");
        H5Dclose(d);
    }
    H5Pclose(dxpl), H5Sclose(ms), H5Sclose(fs), H5Pclose(fapl);
    if (H5Fclose(f) < 0) die("H5Fclose");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) { /* durable, then atomic: as the per-rank files */
        int fd = open(tmp, O_RDONLY);
        fsync(fd);
        close(fd);
        if (rename(tmp, path) != 0) die("rename");
        nst_sync_dir(dir);
    }
}

static void read_h5(const char *dir, int rank, int size, float **a, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ckpt.h5", dir);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (f < 0) die("H5Fopen");
    hsize_t start[2] = {(hsize_t)rank, 0}, count[2] = {1, n};
    hid_t ms = H5Screate_simple(2, count, NULL);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    const char *names[3] = {"x", "m", "v"};
    for (int k = 0; k < 3; k++) {
        hid_t d = H5Dopen2(f, names[k], H5P_DEFAULT);
        hid_t fs = H5Dget_space(d);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        if (H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, dxpl, a[k]) < 0) die("H5Dread");
        H5Sclose(fs), H5Dclose(d);
    }
    H5Pclose(dxpl), H5Sclose(ms), H5Pclose(fapl), H5Fclose(f);
    (void)size;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np R checkpoint_format DIR MB_PER_RANK REPEATS\n");
        MPI_Finalize();
        return 2;
    }
    const char *dir = argv[1];
    const double mb = atof(argv[2]);
    const int reps = atoi(argv[3]) > 0 ? atoi(argv[3]) : 1;
    size_t n = (size_t)(mb * 1e6 / 3 / sizeof(float));
    float *a[3];
    for (int k = 0; k < 3; k++) {
        a[k] = malloc(n * sizeof(float));
        if (!a[k]) die("malloc");
        for (size_t i = 0; i < n; i++) a[k][i] = (float)((i * 2654435761u + (size_t)rank * 7 + (size_t)k) % 1000003) * 1e-6f;
    }
    double t[4][64];
    for (int r = 0; r < reps && r < 64; r++) {
        double t0;
        MPI_Barrier(MPI_COMM_WORLD), t0 = now(), write_files(dir, rank, a, n), MPI_Barrier(MPI_COMM_WORLD), t[0][r] = now() - t0;
        MPI_Barrier(MPI_COMM_WORLD), t0 = now(), read_files(dir, rank, a, n), MPI_Barrier(MPI_COMM_WORLD), t[1][r] = now() - t0;
        MPI_Barrier(MPI_COMM_WORLD), t0 = now(), write_h5(dir, rank, size, a, n), MPI_Barrier(MPI_COMM_WORLD), t[2][r] = now() - t0;
        MPI_Barrier(MPI_COMM_WORLD), t0 = now(), read_h5(dir, rank, size, a, n), MPI_Barrier(MPI_COMM_WORLD), t[3][r] = now() - t0;
        if (rank == 0) {
            char p[4200];
            snprintf(p, sizeof p, "%s/ckpt.h5", dir), unlink(p);
            snprintf(p, sizeof p, "%s/manifest", dir), unlink(p);
        }
        char p[4200];
        snprintf(p, sizeof p, "%s/r%05d.nstc", dir, rank), unlink(p);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) {
        const char *names[2] = {"per-rank files + manifest", "one parallel HDF5 file"};
        double total = mb * size;
        for (int m = 0; m < 2; m++) {
            qsort(t[2 * m], (size_t)reps, sizeof(double), cmp);
            qsort(t[2 * m + 1], (size_t)reps, sizeof(double), cmp);
            double w = t[2 * m][reps / 2], rd = t[2 * m + 1][reps / 2];
            printf("| %d | %.0f | %s | %.3f | %.0f | %.3f | %.0f |\n", size, total, names[m], w, total / w, rd, total / rd);
        }
    }
    for (int k = 0; k < 3; k++) free(a[k]);
    MPI_Finalize();
    return 0;
}
