/* tests/test_weights.c: the seeded random VGG-19, the nstbatch weights layout (write, read back,
 * pack/unpack), and broken weight files: each gives one clear error naming the file and what is
 * wrong. The broken files are made here by editing a valid file with the HDF5 API.
 *
 *   build/tests/test_weights [SCRATCH_DIR]
 */
#include <hdf5.h>
#include <unistd.h>

#include "../io/weights/weights.h"
#include "../kernels/backend.h"
#include "../nst/model/net.h"
#include "../nst/model/random_vgg.h"
#include "../util/mem.h"
#include "test.h"


static void t_random_network_is_deterministic(void)
{
    nst_weights a, b, c;
    CHECK(nst_weights_random(&a, 42, 4) == NST_OK && nst_weights_random(&b, 42, 4) == NST_OK &&
              nst_weights_random(&c, 43, 4) == NST_OK,
          "%s", nst_fail_message());
    CHECK(nst_weights_hash(&a) == nst_weights_hash(&b), "same seed, different networks");
    CHECK(nst_weights_hash(&a) != nst_weights_hash(&c), "different seeds, same network");
    CHECK(a.nconv == 16 && a.conv[0].cout == 16 && a.conv[15].cout == 128 && a.conv[0].cin == 3, "widths of 1/4");
    CHECK(nst_weights_validate(&a, "random") == NST_OK, "%s", nst_fail_message());
    /* He-uniform: values bounded by sqrt(6 / fan_in) */
    float bound = sqrtf(6.f / (3 * 9));
    for (size_t i = 0; i < (size_t)16 * 3 * 9; i++) CHECK(fabsf(a.conv[0].w[i]) <= bound, "value %g beyond the bound", a.conv[0].w[i]);
    nst_weights_free(&a), nst_weights_free(&b), nst_weights_free(&c);
    nst_fail_clear();
    CHECK(nst_weights_random(&a, 1, 3) == NST_EINPUT && strstr(nst_fail_message(), "1, 2, 4, 8"), "%s", nst_fail_message());
}

static void t_layout_round_trip_and_pack(void)
{
    nst_weights a, b, c;
    nst_weights_random(&a, 9, 8);
    CHECK(nst_weights_write(test_scratch("w.h5"), &a, 1) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_weights_read(test_scratch("w.h5"), &b) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_weights_hash(&a) == nst_weights_hash(&b) && b.nconv == 16, "read back differs");
    CHECK(b.bgr == a.bgr && b.scale == a.scale && memcmp(a.mean, b.mean, sizeof a.mean) == 0 &&
              memcmp(a.std, b.std, sizeof a.std) == 0 && strcmp(a.description, b.description) == 0,
          "preprocessing or description differ");
    nst_fail_clear();
    CHECK(nst_weights_write(test_scratch("w.h5"), &a, 0) == NST_EINPUT && strstr(nst_fail_message(), "overwrite"), "%s",
          nst_fail_message());
    unsigned char *buf;
    size_t len;
    CHECK(nst_weights_pack(&a, &buf, &len) == NST_OK && nst_weights_unpack(buf, len, &c) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_weights_hash(&a) == nst_weights_hash(&c) && c.scale == a.scale && c.nconv == a.nconv, "pack/unpack differs");
    nst_free(buf);
    nst_weights_free(&a), nst_weights_free(&b), nst_weights_free(&c);
}

/* ---- broken files ------------------------------------------------------------------------------ */

static void copy_file(const char *src, const char *dst, double frac)
{
    FILE *f = fopen(src, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc(n);
    if (fread(b, 1, n, f) != (size_t)n) n = 0;
    fclose(f);
    f = fopen(dst, "wb");
    fwrite(b, 1, (size_t)(n * frac), f);
    fclose(f);
    free(b);
}

static void expect_bad(const char *name, const char *fragment)
{
    nst_weights w;
    nst_fail_clear();
    nst_status s = nst_weights_read(test_scratch(name), &w);
    CHECK(s == NST_EINPUT, "%s: status %d (%s)", name, s, nst_fail_message());
    CHECK(strstr(nst_fail_message(), fragment) != NULL, "%s: '%s' lacks '%s'", name, nst_fail_message(), fragment);
    CHECK(strstr(nst_fail_message(), name) != NULL, "%s: message does not name the file: %s", name, nst_fail_message());
}

/* A copy of the valid file, then `edit` applied to it with HDF5. */
static hid_t edit_copy(const char *name)
{
    char src[1024];
    snprintf(src, sizeof src, "%s", test_scratch("w.h5"));
    copy_file(src, test_scratch(name), 1.0);
    return H5Fopen(test_scratch(name), H5F_ACC_RDWR, H5P_DEFAULT);
}

static void replace_dataset(hid_t f, const char *path, hid_t type, int rank, const hsize_t *dims, const void *data)
{
    H5Ldelete(f, path, H5P_DEFAULT);
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, path, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Dclose(d);
    H5Sclose(sp);
}

static void t_broken_weight_files(void)
{
    nst_weights w;
    nst_weights_random(&w, 9, 8);
    nst_weights_write(test_scratch("w.h5"), &w, 1);
    char src[1024];
    snprintf(src, sizeof src, "%s", test_scratch("w.h5"));

    copy_file(src, test_scratch("truncated.h5"), 0.5);
    expect_bad("truncated.h5", "truncated");
    copy_file(src, test_scratch("tiny.h5"), 0.001);
    expect_bad("tiny.h5", "truncated");
    FILE *t = fopen(test_scratch("text.h5"), "w");
    fputs("these are not weights\n", t);
    fclose(t);
    expect_bad("text.h5", "not an HDF5 file");
    expect_bad("missing.h5", "cannot open");

    hid_t f = edit_copy("missing_layer.h5");
    H5Ldelete(f, "conv2_1", H5P_DEFAULT);
    H5Fclose(f);
    expect_bad("missing_layer.h5", "layer conv2_1 is missing");

    f = edit_copy("wrong_shape.h5");
    static float big[8 * 3 * 5 * 5];
    hsize_t d55[4] = {8, 3, 5, 5};
    replace_dataset(f, "conv1_1/weight", H5T_NATIVE_FLOAT, 4, d55, big);
    H5Fclose(f);
    expect_bad("wrong_shape.h5", "expected (out, in, 3, 3)");

    f = edit_copy("width_mismatch.h5");
    static float w2[8 * 5 * 9];
    hsize_t dw[4] = {8, 5, 3, 3};
    replace_dataset(f, "conv1_2/weight", H5T_NATIVE_FLOAT, 4, dw, w2);
    H5Fclose(f);
    expect_bad("width_mismatch.h5", "conv1_2 has 5 input channels; expected 8");

    f = edit_copy("nan.h5");
    float *vals = malloc(sizeof(float) * 16 * 8 * 9);
    memcpy(vals, w.conv[2].w, sizeof(float) * 16 * 8 * 9);
    vals[17] = NAN;
    hsize_t d3[4] = {16, 8, 3, 3};
    replace_dataset(f, "conv2_1/weight", H5T_NATIVE_FLOAT, 4, d3, vals);
    free(vals);
    H5Fclose(f);
    expect_bad("nan.h5", "conv2_1 kernel value 17 is not finite");

    f = edit_copy("int_bias.h5");
    int ib[8] = {0};
    hsize_t d8[1] = {8};
    replace_dataset(f, "conv1_1/bias", H5T_NATIVE_INT, 1, d8, ib);
    H5Fclose(f);
    expect_bad("int_bias.h5", "not a floating-point dataset");

    f = edit_copy("no_format.h5");
    H5Adelete(f, "format");
    H5Fclose(f);
    expect_bad("no_format.h5", "not a VGG-19 weights file");

    f = edit_copy("no_preprocessing.h5");
    H5Adelete(f, "input_mean");
    H5Fclose(f);
    expect_bad("no_preprocessing.h5", "input_mean");

    /* Keras layout with an extra 4-D dataset in a layer group: ambiguous */
    hid_t k = H5Fcreate(test_scratch("keras_ambiguous.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(k, "block1_conv1", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t kd[4] = {3, 3, 3, 8};
    static float kw[3 * 3 * 3 * 8], kb[8];
    replace_dataset(g, "block1_conv1_W_1:0", H5T_NATIVE_FLOAT, 4, kd, kw);
    replace_dataset(g, "extra_W_1:0", H5T_NATIVE_FLOAT, 4, kd, kw);
    replace_dataset(g, "block1_conv1_b_1:0", H5T_NATIVE_FLOAT, 1, d8, kb);
    H5Gclose(g);
    H5Fclose(k);
    expect_bad("keras_ambiguous.h5", "one 4-D kernel and one 1-D bias");
    nst_weights_free(&w);
}

/* A prefix of the network is a valid file; a loss deeper than it is refused by name. */
static void t_prefix_network_and_depth_check(void)
{
    nst_weights w, r;
    nst_weights_random(&w, 9, 16);
    w.nconv = 10; /* conv1_1 .. conv4_2 */
    CHECK(nst_weights_write(test_scratch("prefix.h5"), &w, 1) == NST_OK, "%s", nst_fail_message());
    w.nconv = 16;
    nst_weights_free(&w);
    CHECK(nst_weights_read(test_scratch("prefix.h5"), &r) == NST_OK && r.nconv == 10, "prefix: %s", nst_fail_message());
    nst_backend *be;
    nst_net net;
    nst_backend_open("cpu", 0, &be);
    CHECK(nst_net_create(be, &r, nst_vgg_find("relu4_2"), NST_POOL_MAX, &net) == NST_OK, "%s", nst_fail_message());
    nst_net_destroy(&net);
    nst_fail_clear();
    CHECK(nst_net_create(be, &r, nst_vgg_find("relu5_1"), NST_POOL_MAX, &net) == NST_EINPUT &&
              strstr(nst_fail_message(), "the loss uses relu5_1") && strstr(nst_fail_message(), "end at conv4_2"),
          "%s", nst_fail_message());
    nst_backend_close(be);
    nst_weights_free(&r);
}

int main(int argc, char **argv)
{
    if (!test_scratch_init(argc, argv, "test-weights")) return 1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    RUN(t_random_network_is_deterministic);
    RUN(t_layout_round_trip_and_pack);
    RUN(t_broken_weight_files);
    RUN(t_prefix_network_and_depth_check);
    test_scratch_done();
    return test_report("test_weights");
}
