/* video/setup.c: checking and resolving a clip render's settings (see setup.h). */
#include "setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../flow/dis.h"
#include "../io/ckpt_file.h"
#include "../nst/inputs/inputs.h"
#include "plan.h"

static const char *where(const nst_config *cfg, int key, char *buf, size_t cap)
{
    nst_config_where(cfg, key, buf, cap);
    return buf;
}

/* video.fps: N or N/D, positive. */
static nst_status parse_fps(const nst_config *cfg, int *num, int *den)
{
    char w[400], *end;
    long n = strtol(cfg->video_fps, &end, 10), d = 1;
    if (*end == '/') d = strtol(end + 1, &end, 10);
    if (*end || n <= 0 || d <= 0 || n > 1000000 || d > 1000000)
        return nst_fail(NST_EINPUT, "%s = '%s': a frame rate is N or N/D with positive integers (25, 24000/1001)",
                        where(cfg, NST_K_video_fps, w, sizeof w), cfg->video_fps);
    *num = (int)n, *den = (int)d;
    return NST_OK;
}

/* A comma-separated list of non-negative integers into v (at most cap). */
static nst_status parse_ints(const nst_config *cfg, int key, const char *text, long long lo, long long *v, int cap, int *n)
{
    char w[400], buf[NST_CFG_STR_MAX];
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        char *end;
        long long x = strtoll(tok, &end, 10);
        if (*end || x < lo || *n == cap)
            return nst_fail(NST_EINPUT, "%s: '%s' is not %s (at most %d, comma-separated)", where(cfg, key, w, sizeof w), tok,
                            lo > 1 ? "a frame distance of 2 or more" : "a frame number", cap);
        v[(*n)++] = x;
    }
    return NST_OK;
}

/* The range against the clip's frames. */
static nst_status check_range(const nst_config *cfg, nst_clip_setup *su)
{
    char w[400];
    const long long total = su->clip.frames;
    su->first = cfg->video_first, su->step = cfg->video_step;
    if (su->first >= total)
        return nst_fail(NST_EINPUT, "%s = %lld: %s has %lld frames (0-%lld): set video.first within them", where(cfg, NST_K_video_first, w, sizeof w),
                        su->first, cfg->content_path, total, total - 1);
    long long avail = (total - su->first + su->step - 1) / su->step;
    su->n = cfg->video_frames ? cfg->video_frames : avail;
    if (su->n > avail)
        return nst_fail(NST_EINPUT, "%s = %lld: from frame %lld every %lld, %s has %lld frames to render: set video.frames to at most that, or 0 for all",
                        where(cfg, NST_K_video_frames, w, sizeof w), su->n, su->first, su->step, cfg->content_path, avail);
    return NST_OK;
}

/* The flows: the distances, DIS or files. */
static nst_status check_flow(const nst_config *cfg, nst_clip_setup *su)
{
    char w[400];
    long long lt[NST_MAX_TEMPORAL];
    int nlt;
    NST_TRY(parse_ints(cfg, NST_K_video_long_term, cfg->video_long_term, 2, lt, NST_MAX_TEMPORAL - 1, &nlt));
    su->nj = 0;
    su->j[su->nj++] = 1;
    for (int i = 0; su->temporal && i < nlt; i++) {
        if (lt[i] <= su->j[su->nj - 1] || lt[i] > 64)
            return nst_fail(NST_EINPUT, "%s: the distances must increase and be at most 64 (2,4 or 2,4,8)", where(cfg, NST_K_video_long_term, w, sizeof w));
        su->j[su->nj++] = (int)lt[i];
    }
    const int files = strcmp(cfg->video_flow, "files") == 0;
    if (files) {
        if (!nst_clip_is_pattern(cfg->video_flow_forward) || !nst_clip_is_pattern(cfg->video_flow_backward))
            return nst_fail(NST_EINPUT, "video.flow = files: set video.flow_forward and video.flow_backward to printf patterns of .flo files (flow/fwd_%%05d.flo)");
        if (su->nj > 1 || su->step != 1 || su->W != su->clip.w || su->H != su->clip.h)
            return nst_fail(NST_EINPUT, "%s = files: .flo files give the flow between consecutive frames at the clip's size: use video.step = 1, "
                            "no video.long_term and the clip's size, or video.flow = dis", where(cfg, NST_K_video_flow, w, sizeof w));
        su->flows = 1;
    } else {
        su->flows = nst_dis_available();
        if (!su->flows && su->temporal) { /* why not: no OpenCV in this build, or the video plugin did not load */
            nst_dis *d = NULL;
            nst_status s = nst_dis_open("medium", &d);
            nst_dis_close(d);
            if (s == NST_OK) s = nst_fail(NST_ERUNTIME, "DIS optical flow opened once it was said to be missing");
            return nst_fail_context(s, "%s = dis (or set video.temporal_weight = 0)", where(cfg, NST_K_video_flow, w, sizeof w));
        }
    }
    if (!su->flows) su->nj = 0;
    return NST_OK;
}

/* The output: a video file (its codec and container) or a pattern. */
static nst_status check_output(const nst_config *cfg, nst_clip_setup *su)
{
    char w[400];
    const char *out = cfg->output_path;
    su->out_video = nst_clip_is_video_name(out);
    if (!su->out_video && !nst_clip_is_pattern(out))
        return nst_fail(NST_EINPUT, "%s = '%s': a clip renders to a video file (.mp4, .mov, .mkv) or to frames named by a printf pattern "
                        "(out/%%05d.png or .tif): set output.path to one", where(cfg, NST_K_output_path, w, sizeof w), out);
    su->codec = nst_vcodec_parse(cfg->video_codec);
    long long num = su->clip.fps_num, den = su->clip.fps_den * su->step, a = num, b = den;
    while (b) { long long t = a % b; a = b, b = t; } /* 30000/2002 is 15000/1001 */
    su->out_fps_num = (int)(num / a), su->out_fps_den = (int)(den / a);
    nst_clip_out_spec os = {out, su->W, su->H, su->out_fps_num, su->out_fps_den, (nst_vcodec)su->codec, (int)cfg->video_crf,
                            atoi(cfg->output_bits), su->first, NULL, 0, 0, (int)cfg->video_encode_threads, cfg->output_overwrite, NULL};
    return nst_clip_check_target(&os);
}

/* What render this is, for the work directory: the config's hash and the range. */
static nst_status make_key(const nst_config *cfg, nst_clip_setup *su)
{
    nst_config c = *cfg; /* the keys that do not change the frames are left out of the hash */
    memset(c.output_path, 0, sizeof c.output_path), memset(c.video_codec, 0, sizeof c.video_codec);
    c.video_crf = 0, c.video_audio = 0, c.video_encode_threads = 0, c.output_overwrite = 0;
    memset(c.video_work, 0, sizeof c.video_work), memset(c.origin, 0, sizeof c.origin), memset(c.file, 0, sizeof c.file);
    char *text = nst_config_text(&c);
    if (!text) return nst_fail(NST_ENOMEM, "out of memory describing the config");
    snprintf(su->key, sizeof su->key, "config %016llx, frames %lld+%lldx%lld, %dx%d", (unsigned long long)nst_hash64(text, strlen(text), 0),
             su->first, su->step, su->n, su->W, su->H);
    free(text);
    if (cfg->video_work[0])
        snprintf(su->work, sizeof su->work, "%s", cfg->video_work);
    else
        snprintf(su->work, sizeof su->work, "%.4080s.frames", cfg->output_path);
    for (char *p = su->work; *p; p++) /* a pattern's conversion is no part of a directory's name */
        if (*p == '%') *p = '_';
    return NST_OK;
}

nst_clip_limits nst_clip_input_limits(const nst_config *cfg)
{
    return (nst_clip_limits){cfg->input_max_whole_megapixels * 1e6, 65536, 100000000, "content.path"};
}

int nst_clip_wanted(const nst_config *cfg)
{
    return nst_clip_is_video_name(cfg->content_path) || nst_clip_is_pattern(cfg->content_path);
}

nst_status nst_clip_setup_make(const nst_config *cfg, nst_clip_setup *su)
{
    char w[400];
    memset(su, 0, sizeof *su);
    NST_TRY(parse_fps(cfg, &su->fps_num, &su->fps_den));
    nst_clip_limits lim = nst_clip_input_limits(cfg);
    nst_clip_reader *r = NULL;
    NST_TRY(nst_clip_open(cfg->content_path, su->fps_num, su->fps_den, &lim, &r, &su->clip));
    nst_clip_close(r);
    nst_output_size(cfg, su->clip.w, su->clip.h, &su->W, &su->H);
    NST_TRY(check_range(cfg, su));
    su->temporal = cfg->video_temporal_weight > 0;
    su->warm_iterations = cfg->video_iterations >= 0 ? cfg->video_iterations : (cfg->optim_iterations + 1) / 2;
    NST_TRY(check_flow(cfg, su));
    su->passes = (int)cfg->video_passes;
    su->pass_iterations = cfg->video_pass_iterations >= 0 ? cfg->video_pass_iterations : (su->warm_iterations + 1) / 2;
    if (su->passes > 1 && (!su->temporal || !su->flows))
        return nst_fail(NST_EINPUT, "%s = %d: the passes after the first hold frames to their neighbours along the flow: they need "
                        "video.temporal_weight > 0 and a flow (DIS or .flo files)", where(cfg, NST_K_video_passes, w, sizeof w), su->passes);
    NST_TRY(check_output(cfg, su));
    long long cuts[256];
    int nc;
    NST_TRY(parse_ints(cfg, NST_K_video_cuts, cfg->video_cuts, 0, cuts, 256, &nc));
    for (int i = 0; i < nc; i++)
        if (cuts[i] > su->first) su->cuts[su->ncuts++] = nst_clip_range_index(cuts[i], su->first, su->step);
    (void)w;
    return make_key(cfg, su);
}

void nst_clip_feeder_spec(const nst_config *cfg, const nst_clip_setup *su, nst_feeder_spec *fs)
{
    memset(fs, 0, sizeof *fs);
    fs->path = cfg->content_path;
    fs->fps_num = su->fps_num, fs->fps_den = su->fps_den;
    fs->lim = nst_clip_input_limits(cfg);
    fs->first = su->first, fs->step = su->step;
    fs->W = su->W, fs->H = su->H;
    fs->nj = su->nj;
    memcpy(fs->j, su->j, sizeof fs->j);
    fs->files = strcmp(cfg->video_flow, "files") == 0;
    fs->dis_preset = cfg->video_dis_preset;
    fs->fwd_pattern = cfg->video_flow_forward, fs->bwd_pattern = cfg->video_flow_backward;
}
