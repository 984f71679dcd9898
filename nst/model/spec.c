/* nst/model/spec.c: parsing and checking the loss specification (see spec.h). */
#include "spec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void valid_relus(char *out, size_t cap)
{
    snprintf(out, cap, "relu1_1..relu1_2, relu2_1..relu2_2, relu3_1..relu3_4, relu4_1..relu4_4, relu5_1..relu5_4");
}

/* Split a comma-separated list of layer names into layer indices. */
static nst_status parse_layers(const nst_config *cfg, int key, const char *text, int *idx, int *n)
{
    char buf[NST_CFG_STR_MAX], valid[160];
    const nst_key_info *k = &nst_config_keys(NULL)[key];
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t') tok++;
        char *end = tok + strlen(tok);
        while (end > tok && (end[-1] == ' ' || end[-1] == '\t')) *--end = 0;
        if (!*tok)
            return nst_fail(NST_EINPUT, "%s: %s: empty layer name in '%s'", nst_config_origin(cfg, key), k->full, text);
        int i = nst_vgg_find(tok);
        if (i < 0 || !nst_vgg_layer_at(i)->relu || strcmp(nst_vgg_layer_at(i)->relu, tok) != 0) {
            valid_relus(valid, sizeof valid);
            return nst_fail(NST_EINPUT, "%s: %s: unknown layer '%.40s'; valid: %s", nst_config_origin(cfg, key), k->full, tok,
                            valid);
        }
        for (int j = 0; j < *n; j++)
            if (idx[j] == i)
                return nst_fail(NST_EINPUT, "%s: %s: layer %s listed twice", nst_config_origin(cfg, key), k->full, tok);
        idx[(*n)++] = i;
    }
    return NST_OK;
}

/* The non-empty items of a comma-separated list. */
static int list_count(const char *text)
{
    int n = 0, item = 0;
    for (const char *p = text;; p++) {
        if (*p == ',' || !*p) {
            n += item;
            item = 0;
            if (!*p) break;
        } else if (*p != ' ' && *p != '\t') {
            item = 1;
        }
    }
    return n;
}

/* style.masks: one per style image, in style.path's order. */
static nst_status parse_masks(const nst_config *cfg, nst_loss_spec *s)
{
    s->content_mask = cfg->content_mask[0] != 0;
    s->nmask = list_count(cfg->style_masks);
    int nimages = list_count(cfg->style_path);
    if (s->nmask && s->nmask != nimages)
        return nst_fail(NST_EINPUT, "%s: style.masks lists %d mask%s for %d style image%s (%s): give one mask per style image, in "
                        "style.path's order", nst_config_origin(cfg, NST_K_style_masks), s->nmask, s->nmask == 1 ? "" : "s", nimages,
                        nimages == 1 ? "" : "s", nst_config_origin(cfg, NST_K_style_path));
    return NST_OK;
}

nst_status nst_loss_spec_parse(const nst_config *cfg, nst_loss_spec *s)
{
    memset(s, 0, sizeof *s);
    NST_TRY(parse_layers(cfg, NST_K_content_layers, cfg->content_layers, s->content, &s->ncontent));
    NST_TRY(parse_layers(cfg, NST_K_style_layers, cfg->style_layers, s->style, &s->nstyle));
    for (int i = 0; i < s->nstyle; i++) s->style_layer_weight[i] = 1.f;
    if (cfg->style_layer_weights[0]) {
        char buf[NST_CFG_STR_MAX];
        const char *where = nst_config_origin(cfg, NST_K_style_layer_weights);
        snprintf(buf, sizeof buf, "%s", cfg->style_layer_weights);
        int n = 0;
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            char *end;
            errno = 0;
            double v = strtod(tok, &end);
            while (*end == ' ' || *end == '\t') end++;
            if (end == tok || *end || errno || !isfinite(v) || v < 0 || v > 1e12)
                return nst_fail(NST_EINPUT, "%s: style.layer_weights: '%.40s' is not a number in [0, 1e12]", where, tok);
            if (n < s->nstyle) s->style_layer_weight[n] = (float)v;
            n++;
        }
        if (n != s->nstyle)
            return nst_fail(NST_EINPUT, "%s: style.layer_weights has %d values for %d style layers (%s)", where, n, s->nstyle,
                            cfg->style_layers);
    }
    NST_TRY(parse_masks(cfg, s));
    s->content_weight = cfg->content_weight;
    s->style_weight = cfg->style_weight;
    s->tv_weight = cfg->tv_weight;
    s->pool = strcmp(cfg->model_pooling, "avg") == 0 ? NST_POOL_AVG : NST_POOL_MAX;
    s->deepest = -1;
    for (int i = 0; i < s->ncontent; i++)
        if (s->content[i] > s->deepest) s->deepest = s->content[i];
    for (int i = 0; i < s->nstyle; i++)
        if (s->style[i] > s->deepest) s->deepest = s->style[i];
    int active = (s->ncontent && s->content_weight > 0) || (s->nstyle && s->style_weight > 0) || s->tv_weight > 0;
    if (!active)
        return nst_fail(NST_EINPUT,
                        "nothing to optimise: no content or style layers with a positive weight, and tv.weight = 0");
    return NST_OK;
}

void nst_loss_spec_describe(const nst_loss_spec *s, char *out, size_t cap)
{
    size_t n = 0;
    n += (size_t)snprintf(out + n, cap - n, "content");
    for (int i = 0; i < s->ncontent && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "," : " ", nst_vgg_layer_at(s->content[i])->relu);
    if (n < cap) n += (size_t)snprintf(out + n, cap - n, " x %g; style", s->content_weight);
    for (int i = 0; i < s->nstyle && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s:%g", i ? "," : " ", nst_vgg_layer_at(s->style[i])->relu,
                              s->style_layer_weight[i]);
    if (n < cap) snprintf(out + n, cap - n, " x %g; tv x %g; %s pooling", s->style_weight, s->tv_weight,
                          s->pool == NST_POOL_MAX ? "max" : "avg");
}

int nst_loss_spec_min_side(const nst_loss_spec *s)
{
    return s->deepest < 0 ? 1 : nst_vgg_footprint(s->deepest).stride;
}
