/* video/clip.c: a clip render on every rank (see clip.h). */
#include "clip.h"

#include <stdio.h>
#include <string.h>

#include "../mpi/comm.h"
#include "../nst/model/net.h"
#include "../nst/plan/layout.h"
#include "../nst/render/levels.h"
#include "../nst/inputs/masks.h"
#include "../nst/inputs/style.h"
#include "../util/log.h"
#include "../util/mem.h"
#include "../util/timer.h"
#include "cuts.h"
#include "encode.h"
#include "plan.h"
#include "setup.h"
#include "unit.h"

/* World rank 0, video.detect_cuts: a pass over the frames, a cut where consecutive frames'
 * colours differ by more than video.cut_threshold; added to su's cuts. */
static nst_status detect_cuts(const nst_config *cfg, nst_clip_setup *su)
{
    double t0 = nst_now();
    nst_clip_limits lim = nst_clip_input_limits(cfg);
    nst_clip_reader *rd = NULL;
    nst_clip_info info;
    NST_TRY(nst_clip_open(cfg->content_path, su->fps_num, su->fps_den, &lim, &rd, &info));
    nst_cut_signature prev, cur;
    nst_status s = NST_OK;
    int found = 0;
    for (long long r = 0; s == NST_OK && r < su->n; r++) {
        nst_image f = {0};
        s = nst_clip_read(rd, su->first + r * su->step, &f);
        if (s != NST_OK) break;
        nst_cut_signature_of(f.px, f.w, f.h, &cur);
        nst_image_free(&f);
        double d = r ? nst_cut_distance(&prev, &cur) : 0;
        if (r && d > cfg->video_cut_threshold && su->ncuts < 256) {
            su->cuts[su->ncuts++] = r;
            found++;
            nst_info("clip:    a cut before frame %lld (clip frame %lld): colours differ by %.2f (video.cut_threshold %.2f)\n", r + 1,
                     su->first + r * su->step, d, cfg->video_cut_threshold);
        }
        prev = cur;
    }
    nst_clip_close(rd);
    if (s == NST_OK) nst_info("clip:    %d cut%s detected over %lld frames (%.2f s)\n", found, found == 1 ? "" : "s", su->n, nst_now() - t0);
    return s;
}

/* How many groups, of how many ranks: video.group_ranks, or one group per unit as far as the
 * ranks go. */
static void group_shape(const nst_config *cfg, int nunits, int *ngroups, int *per)
{
    const int size = nst_comm_world_size();
    int g = cfg->video_group_ranks > 0 ? (int)cfg->video_group_ranks : size / (nunits < size ? nunits : size);
    if (g < 1) g = 1;
    if (g > size) g = size;
    int n = size / g;
    if (n > nunits) n = nunits;
    if (n < 1) n = 1;
    *ngroups = n, *per = g;
}

/* What a group needs once, for all its frames: the styles, masks, shapes and memory budget. */
typedef struct {
    nst_styles styles;
    nst_masks masks;
    nst_net shapes;
    int have_shapes;
    double budget;
} group_res;

static nst_status group_open(const nst_config *cfg, const nst_loss_spec *spec, nst_backend *be, const nst_weights *w,
                             const nst_clip_setup *su, group_res *g)
{
    memset(g, 0, sizeof *g);
    nst_status s = NST_OK;
    if (spec->nstyle > 0) s = nst_styles_open(cfg, &g->styles);
    if (s == NST_OK) s = nst_masks_open(cfg, g->styles.n, su->clip.w, su->clip.h, &g->masks);
    nst_level_plan p; /* a cold frame's pyramid: its coarsest level is the smallest the styles meet */
    if (s == NST_OK) s = nst_comm_agree(nst_levels_plan(cfg, spec, su->W, su->H, su->W, su->H, &p));
    if (s == NST_OK && g->styles.n > 0)
        s = nst_comm_agree(nst_styles_check(cfg, spec, &g->styles, p.w[0] > p.h[0] ? p.w[0] : p.h[0], su->W > su->H ? su->W : su->H));
    if (s == NST_OK) {
        s = nst_net_shapes(be, w, spec->deepest, spec->pool, &g->shapes);
        g->have_shapes = s == NST_OK;
    }
    if (s == NST_OK) {
        double b = (double)nst_memory_budget(be, cfg->run_memory_gb, nst_comm_local_size()), bmax, bsum;
        s = nst_comm_stats(&b, &g->budget, &bmax, &bsum, 1);
    }
    return nst_comm_agree(s);
}

static void group_close(group_res *g)
{
    nst_styles_close(&g->styles);
    nst_masks_close(&g->masks);
    if (g->have_shapes) nst_net_destroy(&g->shapes);
}

/* This group's units, one after another. tot: rank 0's totals. */
static nst_status render_group(const nst_config *cfg, const nst_loss_spec *spec, nst_backend *be, nst_collectives coll, const nst_clip_env *env,
                               const nst_clip_setup *su, const nst_clip_plan *plan, const int *group, int mine, const nst_clip_store *store,
                               nst_clip_totals *tot)
{
    group_res g;
    nst_status s = group_open(cfg, spec, be, env->weights, su, &g);
    nst_frame_env fe = {cfg, spec, be, env->weights, &g.shapes, coll, spec->nstyle > 0 ? &g.styles : NULL,
                        g.masks.n || g.masks.content ? &g.masks : NULL, env->cache, (size_t)g.budget, env->progress, su->W, su->H};
    nst_feeder_spec fs;
    nst_clip_feeder_spec(cfg, su, &fs);
    nst_unit_ctx u = {&fe, &fs, store, su->temporal, su->warm_iterations, su->n, su->passes, su->pass_iterations, cfg->video_pass_blend, tot};
    for (int k = 0; s == NST_OK && k < plan->nunits; k++)
        if (group[k] == mine) s = nst_unit_render(&u, &plan->unit[k]);
    group_close(&g);
    return s;
}

/* The settings on world rank 0, the cuts, then every rank's copy. */
static nst_status setup_all(const nst_config *cfg, nst_clip_setup *su)
{
    nst_status s = nst_comm_rank() == 0 ? nst_clip_setup_make(cfg, su) : NST_OK;
    if (s == NST_OK && nst_comm_rank() == 0 && cfg->video_detect_cuts && su->n > 1) s = detect_cuts(cfg, su);
    s = nst_comm_agree(s);
    if (s == NST_OK) s = nst_comm_bcast(su, sizeof *su, 0);
    return s;
}

static void describe(const nst_config *cfg, const nst_clip_setup *su, const nst_clip_plan *plan, int ngroups, int per)
{
    nst_info("clip:    %s: %s\n", cfg->content_path, su->clip.detail);
    char every[48] = "", held[160], passes[96] = "";
    if (su->passes > 1)
        snprintf(passes, sizeof passes, "; %d passes, the later ones %lld iterations a frame", su->passes, su->pass_iterations);
    if (su->step > 1) snprintf(every, sizeof every, " every %lld", su->step);
    nst_info("clip:    frames %lld-%lld%s: %lld at %dx%d, %d shot%s in %d unit%s, on %d group%s of %d rank%s\n", su->first,
             su->first + (su->n - 1) * su->step, every, su->n, su->W, su->H, plan->nshots, plan->nshots == 1 ? "" : "s", plan->nunits,
             plan->nunits == 1 ? "" : "s", ngroups, ngroups == 1 ? "" : "s", per, per == 1 ? "" : "s");
    snprintf(held, sizeof held, "frame i-1");
    for (int k = 1; k < su->nj; k++) snprintf(held + strlen(held), sizeof held - strlen(held), ", i-%d", su->j[k]);
    if (su->temporal)
        nst_info("clip:    temporal weight %g, held to %s; warm frames %lld iterations; flow %s%s\n", cfg->video_temporal_weight, held,
                 su->warm_iterations, strcmp(cfg->video_flow, "files") == 0 ? "from .flo files" : cfg->video_dis_preset, passes);
    else
        nst_info("clip:    independent frames (video.temporal_weight = 0)\n");
    nst_info("clip:    output %s at %d/%d fps; work directory %s\n", cfg->output_path, su->out_fps_num, su->out_fps_den, su->work);
}

/* The groups' totals added on world rank 0, and the summary. */
static nst_status summary(const nst_config *cfg, const nst_clip_totals *t, double seconds, double encode_s, const nst_clip_setup *su)
{
    double v[8] = {(double)t->frames, t->render_seconds, t->flow_seconds, t->decode_seconds, t->flicker_ruder, t->flicker_lai, t->floor_ruder,
                   (double)t->measured};
    NST_TRY(nst_comm_sum_doubles(v, 8));
    if (v[0] > 0)
        nst_info("clip:    %.0f frames rendered in %.1f s (%.2f s per frame on each group); flow %.1f s (%.1f%% of the render), decoding %.1f s\n",
                 v[0], seconds, v[1] / v[0], v[2], v[1] > 0 ? 100 * v[2] / v[1] : 0, v[3]);
    if (v[7] > 0)
        nst_info("clip:    mean warping error %.4e (the input's %.4e), Lai %.4e, over %.0f frame pairs\n", v[4] / v[7], v[6] / v[7], v[5] / v[7], v[7]);
    nst_info("wrote %s (%lld frames, %dx%d, %d/%d fps; encoded in %.1f s)\n", cfg->output_path, su->n, su->W, su->H,
             su->out_fps_num, su->out_fps_den, encode_s);
    return NST_OK;
}

nst_status nst_clip_run(const nst_config *cfg, nst_backend *be, nst_collectives coll, const nst_clip_env *env)
{
    double t0 = nst_now();
    nst_clip_setup *su = nst_calloc(sizeof *su, "the clip's settings");
    nst_status s = nst_comm_agree(su ? NST_OK : NST_ENOMEM);
    if (s != NST_OK) return s;
    nst_loss_spec spec;
    s = nst_comm_agree(nst_loss_spec_parse(cfg, &spec));
    spec.temporal_weight = cfg->video_temporal_weight;
    if (s == NST_OK) s = setup_all(cfg, su);
    nst_clip_plan plan;
    memset(&plan, 0, sizeof plan);
    if (s == NST_OK) s = nst_comm_agree(nst_clip_plan_make(su->n, su->cuts, su->ncuts, cfg->video_chunk_frames, &plan));
    int *group = s == NST_OK ? nst_alloc_array((size_t)plan.nunits + 1, sizeof(int), "the units' groups") : NULL;
    if (s == NST_OK) s = nst_comm_agree(group ? NST_OK : NST_ENOMEM);
    int ngroups = 1, per = 1;
    nst_clip_store store;
    memset(&store, 0, sizeof store);
    if (s == NST_OK) {
        group_shape(cfg, plan.nunits, &ngroups, &per);
        nst_clip_plan_assign(&plan, ngroups, group);
        describe(cfg, su, &plan, ngroups, per);
        s = nst_comm_agree(nst_comm_rank() == 0 ? nst_clip_store_open(&store, su->work, su->key, env->restart) : NST_OK);
        snprintf(store.dir, sizeof store.dir, "%s", su->work);
    }
    nst_clip_totals tot;
    memset(&tot, 0, sizeof tot);
    if (s == NST_OK) {
        const int me = nst_comm_world_rank(), mine = me / per < ngroups ? me / per : ngroups - 1;
        nst_group *grp = NULL;
        s = nst_comm_split(mine, me, &grp);
        if (s == NST_OK) {
            nst_comm_push(grp);
            nst_log_set_rank(nst_comm_rank());
            s = render_group(cfg, &spec, be, coll, env, su, &plan, group, mine, &store, &tot);
            if (nst_comm_rank() != 0) memset(&tot, 0, sizeof tot);
            nst_comm_pop();
            nst_log_set_rank(me);
            nst_comm_group_free(grp);
            nst_status w = nst_comm_idle_barrier(); /* groups finish at different times */
            if (s == NST_OK) s = w;
        }
        s = nst_comm_agree(s);
    }
    double encode_s = 0;
    if (s == NST_OK) s = nst_comm_agree(nst_comm_rank() == 0 ? nst_clip_encode(cfg, su, &store, &encode_s) : NST_OK);
    if (s == NST_OK) s = nst_comm_agree(nst_comm_rank() == 0 ? nst_clip_store_remove(&store) : NST_OK);
    if (s == NST_OK) s = summary(cfg, &tot, nst_now() - t0, encode_s, su);
    nst_clip_plan_free(&plan);
    nst_free(group);
    nst_free(su);
    return s;
}
