/* viewer/http.c: request heads, targets to files, content types (see http.h). */
#include "http.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

size_t nst_http_head_end(const char *buf, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (buf[i] != '\n') continue;
        if (buf[i + 1] == '\n') return i + 2; /* bare LF lines, as some clients send */
        if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n') return i + 3;
    }
    return 0;
}

/* Does the header value (up to the line end) hold the token tok, comma-separated, any case? */
static int has_token(const char *v, const char *eol, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = v; p + n <= eol; p++)
        if (strncasecmp(p, tok, n) == 0 && (p == v || strchr(" ,\t", p[-1])) && (p + n == eol || strchr(" ,\t\r", p[n])))
            return 1;
    return 0;
}

int nst_http_parse(const char *head, size_t len, nst_http_request *r)
{
    memset(r, 0, sizeof *r);
    const char *end = head + len, *sp1 = memchr(head, ' ', len);
    if (!sp1 || sp1 == head || (size_t)(sp1 - head) >= sizeof r->method) return 400;
    for (const char *p = head; p < sp1; p++)
        if (*p < 'A' || *p > 'Z') return 400;
    memcpy(r->method, head, (size_t)(sp1 - head));
    const char *t = sp1 + 1, *sp2 = t;
    while (sp2 < end && *sp2 != ' ' && *sp2 != '\r' && *sp2 != '\n') {
        if ((unsigned char)*sp2 <= 0x20 || *sp2 == 0x7f) return 400;
        sp2++;
    }
    if (sp2 == t || sp2 >= end || *sp2 != ' ') return 400;
    if ((size_t)(sp2 - t) >= sizeof r->target) return 414;
    memcpy(r->target, t, (size_t)(sp2 - t));
    const char *v = sp2 + 1;
    if (end - v < 8 || strncmp(v, "HTTP/1.", 7) != 0) return strncmp(v, "HTTP/", 5) == 0 ? 505 : 400;
    int minor = v[7] - '0';
    if (minor < 0 || minor > 9) return 400;
    r->keep_alive = minor >= 1; /* HTTP/1.0 closes: keep-alive there is not worth its rules */
    for (const char *line = memchr(v, '\n', (size_t)(end - v)); line && line + 1 < end;) {
        line++;
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol) break;
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        if (colon) {
            size_t n = (size_t)(colon - line);
            const char *val = colon + 1;
            if (n == 10 && strncasecmp(line, "Connection", n) == 0 && has_token(val, eol, "close")) r->keep_alive = 0;
            if (n == 14 && strncasecmp(line, "Content-Length", n) == 0 && strtol(val, NULL, 10) != 0) r->has_body = 1;
            if (n == 17 && strncasecmp(line, "Transfer-Encoding", n) == 0) r->has_body = 1;
        }
        line = eol;
    }
    if (r->has_body) r->keep_alive = 0; /* its body is not read: the connection ends after the answer */
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The target's path, %XX decoded, into out: 0, or 400. */
static int decode_path(const char *target, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = target; *p && *p != '?' && *p != '#'; p++) {
        char c = *p;
        if (c == '%') {
            int hi = hex_digit(p[1]), lo = hi < 0 ? -1 : hex_digit(p[2]);
            if (lo < 0) return 400;
            c = (char)(hi * 16 + lo);
            if (c == '\0') return 400;
            p += 2;
        }
        if (o + 1 >= cap) return 400;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

int nst_http_resolve(const char *root, const char *target, char *out, size_t cap)
{
    char path[PATH_MAX], full[2 * PATH_MAX], real[PATH_MAX];
    if (target[0] != '/' || decode_path(target, path, sizeof path) != 0) return 400;
    /* segment by segment: ".." is an attack (400); a hidden name is nothing we serve (404) */
    int hidden = 0;
    for (const char *s = path; *s;) {
        while (*s == '/') s++;
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.') return 400;
        if (n > 0 && s[0] == '.') hidden = 1;
        s += n;
    }
    if (hidden) return 404;
    snprintf(full, sizeof full, "%s%s", root, path);
    if (!realpath(full, real)) return 404;
    /* no way out of root, not even through a link inside it */
    size_t rn = strlen(root);
    int inside = strcmp(root, "/") == 0 || (strncmp(real, root, rn) == 0 && real[rn] == '/');
    struct stat st;
    if (!inside || stat(real, &st) != 0 || !S_ISREG(st.st_mode)) return 404;
    if (strlen(real) >= cap) return 404;
    strcpy(out, real);
    return 200;
}

void nst_http_url_encode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 4 < cap; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (cap) out[o] = '\0';
}

const char *nst_http_mime(const char *path)
{
    static const char *const types[][2] = {
        {".html", "text/html; charset=utf-8"}, {".htm", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".json", "application/json"}, {".map", "application/json"},
        {".dzi", "application/xml"}, {".xml", "application/xml"},
        {".jpg", "image/jpeg"}, {".jpeg", "image/jpeg"}, {".png", "image/png"},
        {".svg", "image/svg+xml"}, {".ico", "image/x-icon"}, {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(path, '.');
    if (dot && !strchr(dot, '/'))
        for (size_t i = 0; i < sizeof types / sizeof *types; i++)
            if (strcasecmp(dot, types[i][0]) == 0) return types[i][1];
    return "application/octet-stream";
}

const char *nst_http_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 302: return "Found";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}
