/* viewer/view_main.c: nstbatch-view, which shows a Deep Zoom output of nstbatch in a browser:
 *
 *   nstbatch-view OUTPUT [--port N] [--log]
 *
 * OUTPUT is OUT.dzi, OUT.html, the stem OUT, or a TIFF OUT.tif (turned into OUT.dzi by the
 * converter nstbatch-dzi when there is none). It writes the page when OUT.html is missing, then
 * serves OUT's folder on 127.0.0.1 and prints one line with the page's address. Exit status 0
 * after SIGINT or SIGTERM, 2 for bad arguments, 1 when serving fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../util/exe.h"
#include "../util/status.h"
#include "../util/version.h"
#include "dzi_info.h"
#include "http.h"
#include "page.h"
#include "serve.h"

static const char usage_text[] =
    "usage: nstbatch-view OUTPUT [--port N] [--log]\n"
    "\n"
    "Shows a Deep Zoom output of nstbatch (OUT.dzi and its page OUT.html) in a browser: serves OUT's\n"
    "folder on 127.0.0.1 and prints the page's address. Ctrl-C stops it.\n"
    "\n"
    "  OUTPUT      OUT.dzi, OUT.html or the stem OUT; or a TIFF OUT.tif, which nstbatch-dzi turns\n"
    "              into OUT.dzi first when there is none. Without OUT.html the page is written\n"
    "              (with no configuration or losses: nstbatch writes those).\n"
    "  --port N    listen on port N (1-65535); default: a free port the kernel picks\n"
    "  --log       one line per request on stderr: METHOD /path STATUS BYTES\n"
    "  --help      this text\n"
    "\n"
    "Only this machine can connect; from a laptop, forward the port: ssh -L N:127.0.0.1:N HOST.\n";

static int bad_usage(const char *fmt, const char *arg)
{
    fputs("nstbatch-view: error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* A converter beside this program (a build or an install keeps them together), else on PATH. */
static int find_program(const char *name, char *out, size_t cap)
{
    char dir[PATH_MAX];
    if (nst_exe_dir(dir, sizeof dir) == 0 && (size_t)snprintf(out, cap, "%s/%s", dir, name) < cap && access(out, X_OK) == 0) return 0;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t len = strcspn(p, ":");
        if (len && (size_t)snprintf(out, cap, "%.*s/%s", (int)len, p, name) < cap && access(out, X_OK) == 0) return 0;
        p += len + (p[len] == ':');
    }
    return -1;
}

/* OUT.tif without OUT.dzi: run `nstbatch-dzi OUT.tif`, its output on stderr (stdout carries only
 * the address line). */
static int convert_tiff(const char *tif, const char *stem)
{
    char prog[PATH_MAX];
    if (find_program("nstbatch-dzi", prog, sizeof prog) != 0) {
        fprintf(stderr, "nstbatch-view: error: %s: there is no %s.dzi beside it, and nstbatch-dzi, which makes one, "
                        "is neither beside nstbatch-view nor on PATH: build it (make all) or give a .dzi\n", tif, stem);
        return 2;
    }
    fprintf(stderr, "nstbatch-view: making %s.dzi from %s with %s\n", stem, tif, prog);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "nstbatch-view: error: cannot start %s: %s\n", prog, strerror(errno));
        return 1;
    }
    if (pid == 0) {
        dup2(2, 1);
        execl(prog, prog, tif, (char *)NULL);
        fprintf(stderr, "nstbatch-view: error: cannot run %s: %s\n", prog, strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "nstbatch-view: error: %s %s failed (%s %d): see its message above\n", prog, tif,
                WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return 1;
    }
    return 0;
}

/* The page for an output that has none: its size from the .dzi, the content beside it if there. */
static int write_page(const char *stem)
{
    char dzi[PATH_MAX + 16], content[PATH_MAX + 16];
    snprintf(dzi, sizeof dzi, "%s.dzi", stem);
    snprintf(content, sizeof content, "%s_content.dzi", stem);
    nst_viewer_page p = {.image_dzi = dzi, .content_dzi = is_file(content) ? content : NULL, .version = NST_VERSION};
    nst_status s = nst_dzi_size(dzi, &p.width, &p.height);
    if (s == NST_OK) s = nst_viewer_write(&p);
    if (s != NST_OK) {
        fprintf(stderr, "nstbatch-view: error: %s\n", nst_fail_message());
        return nst_exit_code(s);
    }
    fprintf(stderr, "nstbatch-view: wrote the page %s.html\n", stem);
    return 0;
}

/* OUTPUT to the stem of its files (the .dzi checked), converting a TIFF. 0, or the exit status. */
static int find_output(const char *output, char *stem, size_t cap)
{
    static const char *const exts[] = {".dzi", ".html", ".view.json", ".tiff", ".tif"};
    size_t n = strlen(output), cut = n;
    for (size_t i = 0; i < sizeof exts / sizeof *exts && cut == n; i++)
        if (ends_with(output, exts[i])) cut = n - strlen(exts[i]);
    if (cut + 32 > cap) return bad_usage("%s: path too long", output);
    snprintf(stem, cap, "%.*s", (int)cut, output);
    if (cut != n && !is_file(output))
        return bad_usage("%s: no such file: give the .dzi (or .html, .tif) that nstbatch wrote, or their stem", output);
    char dzi[PATH_MAX + 16];
    snprintf(dzi, sizeof dzi, "%s.dzi", stem);
    /* another file of the output (OUT.png): the .dzi of its stem */
    const char *dot = strrchr(stem, '.'), *slash = strrchr(stem, '/');
    if (cut == n && !is_file(dzi) && dot && dot > (slash ? slash + 1 : stem)) {
        snprintf(dzi, sizeof dzi, "%.*s.dzi", (int)(dot - stem), stem);
        if (is_file(dzi)) stem[dot - stem] = '\0';
        snprintf(dzi, sizeof dzi, "%s.dzi", stem);
    }
    if (!is_file(dzi) && (ends_with(output, ".tif") || ends_with(output, ".tiff"))) {
        int rc = convert_tiff(output, stem);
        if (rc) return rc;
    }
    if (!is_file(dzi)) {
        if (cut == n)
            return bad_usage("%s: no such output: give the .dzi (or .html, .tif) that nstbatch wrote, or their stem", output);
        fprintf(stderr, "nstbatch-view: error: %s: there is no %s.dzi beside it: the page shows that image\n", output, stem);
        return 2;
    }
    return 0;
}

/* --port's value: 1..65535, or -1 */
static int port_number(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno || end == s || *end || v < 1 || v > 65535 ? -1 : (int)v;
}

int main(int argc, char **argv)
{
    const char *output = NULL;
    int port = 0, log = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (strcmp(a, "--log") == 0) {
            log = 1;
        } else if (strcmp(a, "--port") == 0 || strncmp(a, "--port=", 7) == 0) {
            const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) return bad_usage("%s needs a number: --port N (1-65535), or leave it out for a free port", a);
            if ((port = port_number(v)) < 0)
                return bad_usage("--port %s: not a port: give 1 to 65535, or leave --port out for a free one", v);
        } else if (a[0] == '-' && a[1]) {
            return bad_usage("unknown option %s: see nstbatch-view --help", a);
        } else if (output) {
            return bad_usage("%s: one OUTPUT only (see nstbatch-view --help)", a);
        } else {
            output = a;
        }
    }
    if (!output) return bad_usage("%s", "no OUTPUT given: nstbatch-view OUT.dzi [--port N] (see --help)");

    char stem[PATH_MAX], html[PATH_MAX + 8], dir[PATH_MAX], root[PATH_MAX], index[PATH_MAX];
    int rc = find_output(output, stem, sizeof stem);
    if (rc) return rc;
    snprintf(html, sizeof html, "%s.html", stem);
    if (!is_file(html) && (rc = write_page(stem)) != 0) return rc;
    const char *slash = strrchr(stem, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - stem) + (slash == stem) : 1, slash ? stem : ".");
    if (!realpath(dir, root)) {
        fprintf(stderr, "nstbatch-view: error: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    nst_http_url_encode(slash ? slash + 1 : stem, index, sizeof index - 8);
    strcat(index, ".html");

    int fd, bound;
    nst_status s = nst_serve_listen(port, &fd, &bound);
    if (s != NST_OK) {
        fprintf(stderr, "nstbatch-view: error: %s\n", nst_fail_message());
        return nst_exit_code(s);
    }
    printf("nstbatch-view: serving %s.dzi at http://127.0.0.1:%d/%s (Ctrl-C stops)\n", stem, bound, index);
    fflush(stdout);
    s = nst_serve_run(fd, root, index, log);
    if (s != NST_OK) {
        fprintf(stderr, "nstbatch-view: error: %s\n", nst_fail_message());
        return nst_exit_code(s);
    }
    return 0;
}
