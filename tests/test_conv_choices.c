/* tests/test_conv_choices.c: the timed convolution choices' file (io/conv_choices.h): a file
 * written by hand reads as written; a save keeps the other devices' sections and another writer's
 * lines (re-read at save time), and replaces a shape's old choice; every malformed line is refused
 * with its file and line; a missing file is an empty table; a refused load leaves nothing. And the
 * store the backend is given (nst/run/conv_store.h): a timing added is in the file at once and
 * found by the next run's store, or kept for the run without a file; a file in a missing folder or
 * malformed stops the opening. */
#include "../io/conv_choices.h"
#include "../nst/run/conv_store.h"
#include "test.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static nst_conv_choice choice(const char *device, int dir, int cin, int cout, int h, int w, int algo, int math, double ms)
{
    nst_conv_choice c;
    memset(&c, 0, sizeof c);
    snprintf(c.device, sizeof c.device, "%s", device);
    c.dir = dir, c.cin = cin, c.cout = cout, c.h = h, c.w = w, c.algo = algo, c.math = math, c.ms = ms;
    return c;
}

static void t_reads_by_hand(void)
{
    const char *p = test_scratch("hand.txt");
    write_file(p, "# a comment\n\ndevice GPU A | cuDNN 9 | bf16\nforward 3 64 512 384 algo 1 math 1 ms 0.25\n"
                  "backward-data 64 64 512 384 algo 1 math 1 ms 0.5  \r\n"
                  "device GPU B\n  forward 3 64 512 384 algo 0 math 0 ms 2\n");
    nst_conv_choices t = {0};
    CHECK(nst_conv_choices_load(&t, p) == NST_OK, "%s", nst_fail_message());
    CHECK(t.n == 3, "%d choices", t.n);
    const nst_conv_choice *a = nst_conv_choices_find(&t, "GPU A | cuDNN 9 | bf16", NST_CONV_FWD, 3, 64, 512, 384);
    CHECK(a && a->algo == 1 && a->math == 1 && a->ms == 0.25, "GPU A's forward");
    a = nst_conv_choices_find(&t, "GPU A | cuDNN 9 | bf16", NST_CONV_BWD_DATA, 64, 64, 512, 384);
    CHECK(a && a->algo == 1 && a->ms == 0.5, "GPU A's backward-data");
    a = nst_conv_choices_find(&t, "GPU B", NST_CONV_FWD, 3, 64, 512, 384);
    CHECK(a && a->algo == 0 && a->math == 0, "GPU B's line");
    CHECK(!nst_conv_choices_find(&t, "GPU B", NST_CONV_BWD_DATA, 3, 64, 512, 384), "no such direction");
    CHECK(!nst_conv_choices_find(&t, "GPU A | cuDNN 9 | bf16", NST_CONV_FWD, 3, 64, 384, 512), "no such shape (h and w swapped)");
    CHECK(!nst_conv_choices_find(&t, "GPU C", NST_CONV_FWD, 3, 64, 512, 384), "no such device");
    nst_conv_choices_free(&t);
    nst_fail_clear();
    CHECK(nst_conv_choices_load(&t, test_scratch("none.txt")) == NST_OK && t.n == 0, "a missing file is an empty table");
}

/* Two writers of one file: each save merges what the file holds by then. */
static void t_save_merges(void)
{
    const char *p = test_scratch("merged.txt");
    nst_conv_choices a = {0}, b = {0}, back = {0};
    nst_conv_choice c1 = choice("dev A", NST_CONV_FWD, 64, 128, 256, 256, 1, 1, 1.5);
    nst_conv_choice c2 = choice("dev B", NST_CONV_BWD_DATA, 128, 128, 128, 96, 0, 2, 0.125);
    nst_conv_choice c3 = choice("dev A", NST_CONV_BWD_DATA, 64, 128, 256, 256, 1, 1, 2);
    CHECK(nst_conv_choices_put(&a, &c1) == NST_OK && nst_conv_choices_save(&a, "dev A", p) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_conv_choices_put(&b, &c2) == NST_OK && nst_conv_choices_save(&b, "dev B", p) == NST_OK, "%s", nst_fail_message());
    c1.algo = 0, c1.ms = 3; /* rank A's shape timed again: replaces its line */
    CHECK(nst_conv_choices_put(&a, &c1) == NST_OK && nst_conv_choices_put(&a, &c3) == NST_OK && a.n == 2, "%d in a", a.n);
    CHECK(nst_conv_choices_put(&a, &c2) == NST_OK, "dev B's line held by A too"); /* not A's device: not written by A */
    c2.algo = 1;
    CHECK(nst_conv_choices_save(&a, "dev A", p) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_conv_choices_load(&back, p) == NST_OK && back.n == 3, "%d lines back: %s", back.n, nst_fail_message());
    const nst_conv_choice *r = nst_conv_choices_find(&back, "dev A", NST_CONV_FWD, 64, 128, 256, 256);
    CHECK(r && r->algo == 0 && r->ms == 3, "dev A's forward replaced");
    r = nst_conv_choices_find(&back, "dev A", NST_CONV_BWD_DATA, 64, 128, 256, 256);
    CHECK(r && r->algo == 1 && r->math == 1 && r->ms == 2, "dev A's backward-data added");
    r = nst_conv_choices_find(&back, "dev B", NST_CONV_BWD_DATA, 128, 128, 128, 96);
    CHECK(r && r->algo == 0 && r->math == 2 && r->ms == 0.125, "dev B's section kept as B wrote it");
    nst_conv_choices_free(&a);
    nst_conv_choices_free(&b);
    nst_conv_choices_free(&back);
}

static void refused(const char *what, const char *text, const char *line)
{
    const char *p = test_scratch("bad.txt");
    write_file(p, text);
    nst_conv_choices t = {0};
    nst_fail_clear();
    nst_status s = nst_conv_choices_load(&t, p);
    CHECK(s == NST_EINPUT && strstr(nst_fail_message(), p) && strstr(nst_fail_message(), line) &&
              strstr(nst_fail_message(), "delete it to time"),
          "%s: status %d, \"%s\"", what, (int)s, nst_fail_message());
    CHECK(t.n == 0 && !t.v, "%s: nothing kept", what);
    nst_fail_clear();
}

static void t_refusals(void)
{
    const char *dev = "device D\n";
    char buf[600];
    refused("no device line", "forward 3 64 8 8 algo 1 math 1 ms 1\n", "line 1:");
    snprintf(buf, sizeof buf, "%sforward 3 64 8 8 algo 1 math 1\n", dev);
    refused("no time", buf, "line 2:");
    snprintf(buf, sizeof buf, "%sforward 3 64 8 8 algo 1 math 1 ms 1 extra\n", dev);
    refused("trailing words", buf, "line 2:");
    snprintf(buf, sizeof buf, "%s# ok\nsideways 3 64 8 8 algo 1 math 1 ms 1\n", dev);
    refused("an unknown direction", buf, "line 3:");
    snprintf(buf, sizeof buf, "%sforward 0 64 8 8 algo 1 math 1 ms 1\n", dev);
    refused("zero channels", buf, "line 2:");
    snprintf(buf, sizeof buf, "%sforward 3 64 8 8 algo -1 math 1 ms 1\n", dev);
    refused("a negative algorithm", buf, "line 2:");
    snprintf(buf, sizeof buf, "%sbackward-data 3 64 8 8 algo 1 math 1 ms nan\n", dev);
    refused("a time that is no number", buf, "line 2:");
    refused("an empty device", "device \n", "line 1:");
    memset(buf, 'x', sizeof buf - 1);
    buf[sizeof buf - 1] = '\0';
    memcpy(buf, "device ", 7);
    refused("a line too long", buf, "line 1:");
}

static void t_store(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", test_scratch("store.txt"));
    nst_conv_store *a = NULL, *b = NULL;
    nst_conv_memory ma, mb;
    CHECK(nst_conv_store_open(path, &a, &ma) == NST_OK, "%s", nst_fail_message());
    if (!a) return;
    nst_conv_timing t = {"GPU X sm_90 | cuDNN 91000 | bf16", 1, 64, 128, 96, 80, 1, 1, 0.75};
    nst_conv_timing q = t;
    q.algo = q.math = -1;
    CHECK(!ma.find(ma.user, &q), "nothing kept yet");
    ma.add(ma.user, &t);
    CHECK(ma.find(ma.user, &q) && q.algo == 1 && q.math == 1 && q.ms == 0.75, "kept in this run");
    CHECK(nst_conv_store_open(path, &b, &mb) == NST_OK, "%s", nst_fail_message()); /* the next run, with a is still open */
    q.algo = -1, q.dir = 0;
    CHECK(b && !mb.find(mb.user, &q), "the other direction is not kept");
    q.dir = 1;
    CHECK(b && mb.find(mb.user, &q) && q.algo == 1 && q.ms == 0.75, "the next run finds it in the file");
    nst_conv_store_close(a);
    nst_conv_store_close(b);
    nst_conv_store *c = NULL;
    CHECK(nst_conv_store_open("", &c, &ma) == NST_OK && c, "the run's memory alone: %s", nst_fail_message());
    q.algo = -1;
    CHECK(c && !ma.find(ma.user, &q), "an empty memory");
    if (c) ma.add(ma.user, &t);
    CHECK(c && ma.find(ma.user, &q) && q.algo == 1, "kept for the run without a file");
    nst_conv_store_close(c);
    c = NULL;
    nst_fail_clear();
    CHECK(nst_conv_store_open(test_scratch("no/such/folder/choices.txt"), &c, &ma) == NST_EINPUT && !c &&
              strstr(nst_fail_message(), "gpu.conv_choices"),
          "a missing folder: %s", nst_fail_message());
    nst_fail_clear();
    write_file(path, "device D\nforward 1 2 3\n");
    CHECK(nst_conv_store_open(path, &c, &ma) == NST_EINPUT && !c && strstr(nst_fail_message(), "gpu.conv_choices") &&
              strstr(nst_fail_message(), "line 2:"),
          "a malformed file: %s", nst_fail_message());
    nst_fail_clear();
}

int main(int argc, char **argv)
{
    if (!test_scratch_init(argc, argv, "test-conv-choices")) return 1;
    RUN(t_reads_by_hand);
    RUN(t_save_merges);
    RUN(t_refusals);
    RUN(t_store);
    test_scratch_done();
    return test_report("test_conv_choices");
}
