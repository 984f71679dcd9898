/* nst/run/conv_store.c: gpu.conv_choices' file behind the backend's nst_conv_memory. */
#include "conv_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/atomic_file.h"
#include "../../io/conv_choices.h"
#include "../../util/log.h"

struct nst_conv_store {
    nst_conv_choices table;
    char path[4096]; /* "": this run's memory only */
    int warned;      /* the file could not be written: said once, the choices hold for this run */
};

static int store_find(void *user, nst_conv_timing *t)
{
    nst_conv_store *s = user;
    const nst_conv_choice *c = nst_conv_choices_find(&s->table, t->device, t->dir, t->cin, t->cout, t->h, t->w);
    if (!c) return 0;
    t->algo = c->algo, t->math = c->math, t->ms = c->ms;
    return 1;
}

static void store_add(void *user, const nst_conv_timing *t)
{
    nst_conv_store *s = user;
    nst_conv_choice c;
    memset(&c, 0, sizeof c);
    snprintf(c.device, sizeof c.device, "%s", t->device);
    c.dir = t->dir, c.cin = t->cin, c.cout = t->cout, c.h = t->h, c.w = t->w, c.algo = t->algo, c.math = t->math, c.ms = t->ms;
    if (nst_conv_choices_put(&s->table, &c) == NST_OK && (!s->path[0] || nst_conv_choices_save(&s->table, c.device, s->path) == NST_OK))
        return;
    if (!s->warned++) nst_warn("gpu.conv_choices: %s; the timed choices hold for this run only\n", nst_fail_message());
    nst_fail_clear();
}

nst_status nst_conv_store_open(const char *path, nst_conv_store **out, nst_conv_memory *memory)
{
    *out = NULL;
    nst_conv_store *s = calloc(1, sizeof *s);
    if (!s) return nst_fail(NST_ENOMEM, "out of host memory for gpu.conv_choices");
    snprintf(s->path, sizeof s->path, "%s", path ? path : "");
    nst_status st = s->path[0] ? nst_atomic_check_target(s->path, 1) : NST_OK;
    if (st == NST_OK && s->path[0]) st = nst_conv_choices_load(&s->table, s->path);
    if (st != NST_OK) {
        nst_conv_store_close(s);
        return nst_fail_context(st, "gpu.conv_choices");
    }
    *memory = (nst_conv_memory){store_find, store_add, s};
    *out = s;
    return NST_OK;
}

void nst_conv_store_close(nst_conv_store *s)
{
    if (!s) return;
    nst_conv_choices_free(&s->table);
    free(s);
}
