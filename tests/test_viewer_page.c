/* tests/test_viewer_page.c: the viewer's C side without a browser: the JSON escaping of
 * OUT.view.json, the files nst_viewer_write leaves (and nothing half-written), the failures it
 * names, the asset lookup, the .dzi size reader, and the server's request parsing and path rules
 * (no way out of the served folder). tests/test_viewer.sh runs it, and also as the page writer of
 * its browser test:
 *
 *   test_viewer_page [SCRATCH_DIR]
 *   test_viewer_page write IMAGE.dzi CONTENT.dzi|- WIDTH HEIGHT CONFIG_FILE|- [T,C,S,V T,C,S,V]
 *
 * (the losses: first and last, each total,content,style,tv). */
#define _GNU_SOURCE /* open_memstream, setenv */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../viewer/dzi_info.h"
#include "../viewer/http.h"
#include "../viewer/page.h"
#include "../util/text.h"
#include "../viewer/view_json.h"
#include "test.h"

/* a whole file, NUL-terminated (NULL if it cannot be read) */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* no temporary file or folder left in dir (their names start with '.') */
static int no_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int clean = d != NULL;
    while (d && (e = readdir(d)))
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) clean = 0;
    if (d) closedir(d);
    return clean;
}

static char *json_of(const char *s)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    nst_json_string(f, s);
    fclose(f);
    return buf;
}

static void t_json_escaping(void)
{
    static const struct { const char *in, *out; } cases[] = {
        {"plain = 1", "\"plain = 1\""},
        {"a\"b\\c\nd\te\r", "\"a\\\"b\\\\c\\nd\\te\\r\""},
        {"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""}, /* é € 😀 as they are */
        {"\xff|\xc3(|\xc0\xaf", "\"\\ufffd|\\ufffd(|\\ufffd\\ufffd\""},                         /* stray, cut, overlong */
        {"\xed\xa0\x80|\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* surrogate, > U+10FFFF */
        {"\xe2\x82", "\"\\ufffd\\ufffd\""},                                                       /* cut at the end */
        {"", "\"\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = json_of(cases[i].in);
        CHECK(strcmp(got, cases[i].out) == 0, "case %zu: got %s, expected %s", i, got, cases[i].out);
        free(got);
    }
}

/* util/text.c's JSON numbers (the run record's, the metrics log's, view.json's): null for what JSON
 * cannot hold, the format's text otherwise */
static void t_json_numbers(void)
{
    static const struct { double v; const char *fmt, *out; } cases[] = {
        {12.5, "%.9g", "12.5"}, {-3e-7, "%.6e", "-3.000000e-07"}, {0.1, "%.17g", "0.10000000000000001"},
        {NAN, "%.9g", "null"}, {INFINITY, "%.6e", "null"}, {-INFINITY, "%.17g", "null"}, {-1.7976931348623157e308, "%.17g", "-1.7976931348623157e+308"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char b[NST_JSON_NUM];
        const char *got = nst_json_num(b, cases[i].fmt, cases[i].v);
        CHECK(got == b && strcmp(got, cases[i].out) == 0, "case %zu: got %s, expected %s", i, got, cases[i].out);
    }
}

/* the files a page is made of, from a config full of what needs escaping */
static void t_writes_the_page(void)
{
    char assets[4096];
    if (nst_viewer_assets(assets, sizeof assets) != NST_OK) SKIP("%s", nst_fail_message());
    char dzi[1100], content[1100], dir[1024];
    snprintf(dir, sizeof dir, "%s", test_scratch("page"));
    mkdir(dir, 0755);
    snprintf(dzi, sizeof dzi, "%s/out.dzi", dir);
    snprintf(content, sizeof content, "%s/out_content.dzi", dir);
    nst_viewer_page p = {.image_dzi = dzi, .content_dzi = content, .width = 700, .height = 500,
                         .config_text = "[output]\npath = \"a\\b\"\t# caf\xc3\xa9\n", .version = "9.8.7", .have_loss = 1,
                         .first = {3690.5, 0, 3690.25, 0.25}, .last = {12.5, 1.5, 11, 0.0078125}};
    p.last.tv = NAN; /* JSON has no NaN: null */
    nst_status s = nst_viewer_write(&p);
    CHECK(s == NST_OK, "nst_viewer_write: %s", nst_fail_message());
    char path[1200];
    snprintf(path, sizeof path, "%s/out.view.json", dir);
    char *json = slurp(path);
    const char *expect = "{\n  \"nstbatch\": \"9.8.7\",\n  \"image\": \"out.dzi\",\n  \"content\": \"out_content.dzi\",\n"
                         "  \"width\": 700,\n  \"height\": 500,\n"
                         "  \"config\": \"[output]\\npath = \\\"a\\\\b\\\"\\t# caf\xc3\xa9\\n\",\n"
                         "  \"loss\": {\"first\": {\"total\": 3690.5, \"content\": 0, \"style\": 3690.25, \"tv\": 0.25}, "
                         "\"last\": {\"total\": 12.5, \"content\": 1.5, \"style\": 11, \"tv\": null}}\n}\n";
    CHECK(json && strcmp(json, expect) == 0, "view.json is\n%s", json ? json : "(missing)");
    free(json);
    snprintf(path, sizeof path, "%s/out.html", dir);
    char *html = slurp(path);
    CHECK(html && strstr(html, "src=\"out_viewer/viewer.js\"") && strstr(html, "out_viewer/openseadragon/openseadragon.min.js"),
          "the page does not load out_viewer/");
    CHECK(html && !strstr(html, "@ASSETS@"), "a marker is left in the page");
    free(html);
    static const char *const files[] = {"viewer.js", "viewer.css", "openseadragon/openseadragon.min.js",
                                        "openseadragon/LICENSE.txt", "openseadragon/images/zoomin_rest.png"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/out_viewer/%s", dir, files[i]);
        CHECK(exists(path), "%s is missing", path);
    }
    snprintf(path, sizeof path, "%s/out_viewer/viewer.html", dir);
    CHECK(!exists(path), "the page template was copied into the asset folder");
    CHECK(no_temporaries(dir), "a temporary file is left in %s", dir);

    /* written again: the older asset folder is replaced as a whole, and no stray file survives */
    snprintf(path, sizeof path, "%s/out_viewer/stale.txt", dir);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    p.content_dzi = NULL;
    p.have_loss = 0;
    p.config_text = NULL;
    CHECK(nst_viewer_write(&p) == NST_OK, "the second write: %s", nst_fail_message());
    CHECK(!exists(path), "the older out_viewer/ was not replaced");
    CHECK(no_temporaries(dir), "a temporary is left after replacing");
    snprintf(path, sizeof path, "%s/out.view.json", dir);
    json = slurp(path);
    CHECK(json && strstr(json, "\"content\": null") && strstr(json, "\"loss\": null") && strstr(json, "\"config\": null"),
          "no content, config or losses: %s", json ? json : "(missing)");
    free(json);
}

/* an output's name that URLs must escape */
static void t_encodes_the_stem(void)
{
    char assets[4096], dzi[1100], path[1200];
    if (nst_viewer_assets(assets, sizeof assets) != NST_OK) SKIP("%s", nst_fail_message());
    snprintf(dzi, sizeof dzi, "%s/my run #1.dzi", test_scratch(""));
    nst_viewer_page p = {.image_dzi = dzi, .width = 1, .height = 1};
    CHECK(nst_viewer_write(&p) == NST_OK, "%s", nst_fail_message());
    snprintf(path, sizeof path, "%s/my run #1.html", test_scratch(""));
    char *html = slurp(path);
    CHECK(html && strstr(html, "src=\"my%20run%20%231_viewer/viewer.js\""), "the asset URL is not percent-encoded");
    free(html);
    snprintf(path, sizeof path, "%s/my run #1.view.json", test_scratch(""));
    html = slurp(path);
    CHECK(html && strstr(html, "\"image\": \"my run #1.dzi\"") && strstr(html, "\"nstbatch\": \"unknown\""),
          "view.json: %s", html ? html : "(missing)");
    free(html);
}

static void expect_failure(const nst_viewer_page *p, nst_status kind, const char *fragment)
{
    nst_fail_clear();
    nst_status s = nst_viewer_write(p);
    const char *m = nst_fail_message();
    CHECK(s == kind, "expected status %d, got %d (%s)", kind, s, m);
    CHECK(strstr(m, fragment) != NULL, "message '%s' lacks '%s'", m, fragment);
    CHECK(strchr(m, '\n') == NULL, "message is not one line: '%s'", m);
}

static void t_names_its_failures(void)
{
    char dzi[1100], other[1100];
    snprintf(dzi, sizeof dzi, "%s/no-such-folder/out.dzi", test_scratch(""));
    nst_viewer_page p = {.image_dzi = dzi, .width = 10, .height = 10};
    expect_failure(&p, NST_EINPUT, "no-such-folder/out.dzi: its folder does not exist");
    p.image_dzi = "out.png";
    expect_failure(&p, NST_EINPUT, "out.png: the viewer page needs a Deep Zoom image named NAME.dzi");
    snprintf(dzi, sizeof dzi, "%s/out.dzi", test_scratch(""));
    p.image_dzi = dzi;
    p.width = 0;
    expect_failure(&p, NST_EINPUT, "needs the image's size (got 0x10)");
    p.width = 10;
    snprintf(other, sizeof other, "%s/page/out_content.dzi", test_scratch(""));
    p.content_dzi = other;
    expect_failure(&p, NST_EINPUT, "the content image must be in the folder of");
    p.content_dzi = NULL;
    /* assets that are not there: the message says what to do */
    setenv("NSTBATCH_VIEWER_DIR", test_scratch("nothing-here"), 1);
    expect_failure(&p, NST_ERUNTIME, "NSTBATCH_VIEWER_DIR=");
    expect_failure(&p, NST_ERUNTIME, "or unset it");
    unsetenv("NSTBATCH_VIEWER_DIR");
    /* a file where the asset folder goes is not removed */
    char path[1200];
    snprintf(path, sizeof path, "%s/blocked_viewer", test_scratch(""));
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    snprintf(dzi, sizeof dzi, "%s/blocked.dzi", test_scratch(""));
    char assets[4096];
    if (nst_viewer_assets(assets, sizeof assets) == NST_OK) expect_failure(&p, NST_EINPUT, "blocked_viewer: a file is in the way of the folder: move it away");
    nst_fail_clear();
}

static void t_dzi_size(void)
{
    const char *path = test_scratch("size.dzi");
    FILE *f = fopen(path, "w");
    /* libvips' layout: attributes on lines of their own, Height before Width */
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Image xmlns=\"http://schemas.microsoft.com/deepzoom/2008\"\n"
          "  Format=\"jpg\"\n  Overlap=\"0\"\n  TileSize=\"512\"\n  >\n  <Size \n    Height=\"500\"\n    Width=\"700\"\n  />\n</Image>\n",
          f);
    fclose(f);
    int w = 0, h = 0;
    CHECK(nst_dzi_size(path, &w, &h) == NST_OK && w == 700 && h == 500, "got %dx%d: %s", w, h, nst_fail_message());
    f = fopen(path, "w");
    fputs("<Image xmlns='http://schemas.microsoft.com/deepzoom/2008' TileSize='256'><Size TileWidth='3' Width='9' Height='0'/></Image>", f);
    fclose(f);
    nst_fail_clear();
    CHECK(nst_dzi_size(path, &w, &h) == NST_EINPUT && strstr(nst_fail_message(), "no valid Width and Height"), "%s",
          nst_fail_message());
    nst_fail_clear();
    CHECK(nst_dzi_size(test_scratch("none.dzi"), &w, &h) == NST_EINPUT && strstr(nst_fail_message(), "none.dzi: cannot read"),
          "%s", nst_fail_message());
    nst_fail_clear();
}

static void t_http_parse(void)
{
    nst_http_request r;
    const char *get = "GET /out.html?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    CHECK(nst_http_head_end(get, strlen(get)) == strlen(get), "head end");
    CHECK(nst_http_head_end(get, strlen(get) - 1) == 0, "an incomplete head is complete");
    CHECK(nst_http_parse(get, strlen(get), &r) == 0 && strcmp(r.method, "GET") == 0 && strcmp(r.target, "/out.html?x=1") == 0 &&
              r.keep_alive && !r.has_body, "GET");
    const char *close = "HEAD /a HTTP/1.1\r\nconnection: Keep-Alive, close\r\n\r\n";
    CHECK(nst_http_parse(close, strlen(close), &r) == 0 && !r.keep_alive, "Connection: close");
    const char *old = "GET /a HTTP/1.0\n\n";
    CHECK(nst_http_parse(old, strlen(old), &r) == 0 && !r.keep_alive, "HTTP/1.0 closes");
    const char *post = "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\n";
    CHECK(nst_http_parse(post, strlen(post), &r) == 0 && r.has_body && !r.keep_alive, "a body");
    CHECK(nst_http_parse("GET /a HTTP/2.0\r\n\r\n", 19, &r) == 505, "HTTP/2");
    CHECK(nst_http_parse("GET /a\r\n\r\n", 10, &r) == 400, "no version");
    CHECK(nst_http_parse("get /a HTTP/1.1\r\n\r\n", 19, &r) == 400, "lower-case method");
    CHECK(strcmp(nst_http_mime("a/b.DZI"), "application/xml") == 0 && strcmp(nst_http_mime("x.jpeg"), "image/jpeg") == 0 &&
              strcmp(nst_http_mime("x.js"), "text/javascript; charset=utf-8") == 0 &&
              strcmp(nst_http_mime("x.tar.gz"), "application/octet-stream") == 0, "content types");
}

/* the served folder's walls: "..", encoded or not, links out, hidden names */
static void t_http_resolve(void)
{
    char root[1024], real[4096], out[4096], path[1200];
    snprintf(root, sizeof root, "%s", test_scratch("served"));
    mkdir(root, 0755);
    snprintf(path, sizeof path, "%s/sub", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/sub/tile 1.jpg", root);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/.out.html.nstbatch-1.tmp", root);
    if ((f = fopen(path, "w"))) fclose(f);
    snprintf(path, sizeof path, "%s/etc", root);
    CHECK(symlink("/etc", path) == 0, "symlink");
    if (!realpath(root, real)) SKIP("realpath %s", root);
    static const struct { const char *target; int status; } cases[] = {
        {"/sub/tile%201.jpg", 200}, {"/sub/tile%201.jpg?v=2#x", 200}, {"/sub//tile%201.jpg", 200},
        {"/../../etc/passwd", 400}, {"/%2e%2e/%2E%2E/etc/passwd", 400}, {"/sub/..%2f..%2fetc%2fpasswd", 400},
        {"/sub/%2e%2e/sub/tile%201.jpg", 400}, {"/etc/passwd", 404}, {"/.out.html.nstbatch-1.tmp", 404},
        {"/sub", 404}, {"/", 404}, {"/nothing", 404}, {"/a%zz", 400}, {"/a%00b", 400}, {"sub/tile%201.jpg", 400},
        {"http://127.0.0.1/sub/tile%201.jpg", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int s = nst_http_resolve(real, cases[i].target, out, sizeof out);
        CHECK(s == cases[i].status, "%s: %d, expected %d", cases[i].target, s, cases[i].status);
        if (s == 200) CHECK(strncmp(out, real, strlen(real)) == 0, "%s resolves to %s", cases[i].target, out);
    }
}

/* the page writer of tests/test_viewer.sh */
static int write_mode(int argc, char **argv)
{
    if (argc != 7 && argc != 9) {
        fprintf(stderr, "usage: test_viewer_page write IMAGE.dzi CONTENT.dzi|- W H CONFIG|- [T,C,S,V T,C,S,V]\n");
        return 2;
    }
    char *config = strcmp(argv[6], "-") ? slurp(argv[6]) : NULL;
    nst_viewer_page p = {.image_dzi = argv[2], .content_dzi = strcmp(argv[3], "-") ? argv[3] : NULL,
                         .width = atoi(argv[4]), .height = atoi(argv[5]), .config_text = config, .version = NST_VERSION};
    if (argc == 9) {
        nst_viewer_loss *l[2] = {&p.first, &p.last};
        for (int i = 0; i < 2; i++)
            if (sscanf(argv[7 + i], "%lf,%lf,%lf,%lf", &l[i]->total, &l[i]->content, &l[i]->style, &l[i]->tv) != 4) {
                fprintf(stderr, "test_viewer_page: %s: expected T,C,S,V\n", argv[7 + i]);
                return 2;
            }
        p.have_loss = 1;
    }
    nst_status s = nst_viewer_write(&p);
    free(config);
    if (s != NST_OK) fprintf(stderr, "test_viewer_page: %s\n", nst_fail_message());
    return nst_exit_code(s);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "write") == 0) return write_mode(argc, argv);
    if (!test_scratch_init(argc, argv, "test_viewer_page")) return 1;
    RUN(t_json_escaping);
    RUN(t_json_numbers);
    RUN(t_writes_the_page);
    RUN(t_encodes_the_stem);
    RUN(t_names_its_failures);
    RUN(t_dzi_size);
    RUN(t_http_parse);
    RUN(t_http_resolve);
    test_scratch_done();
    return test_report("test_viewer_page");
}
