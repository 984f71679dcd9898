/* video/encode.c: the clip's output from the finished frames (see encode.h). */
#include "encode.h"

#include <stdlib.h>
#include <string.h>

#include "../util/log.h"
#include "../util/timer.h"

nst_status nst_clip_encode(const nst_config *cfg, const nst_clip_setup *su, const nst_clip_store *store, double *seconds)
{
    double t0 = nst_now();
    const double frame_s = (double)su->clip.fps_den / su->clip.fps_num;
    const int audio = su->out_video && cfg->video_audio && su->clip.has_audio && su->clip.is_video;
    char *desc = nst_config_text(cfg);
    nst_clip_out_spec os = {cfg->output_path, su->W, su->H, su->out_fps_num, su->out_fps_den, (nst_vcodec)su->codec, (int)cfg->video_crf,
                            atoi(cfg->output_bits), su->first, audio ? cfg->content_path : NULL, su->first * frame_s,
                            (double)su->n * su->step * frame_s, (int)cfg->video_encode_threads, cfg->output_overwrite, desc};
    nst_clip_writer *w = NULL;
    nst_status s = desc ? nst_clip_writer_open(&os, &w) : nst_fail(NST_ENOMEM, "out of memory describing the config");
    for (long long r = 0; s == NST_OK && r < su->n; r++) {
        nst_image frame = {0};
        s = nst_clip_store_frame(store, r, &frame);
        if (s == NST_OK) s = nst_clip_writer_put(w, &frame);
        nst_image_free(&frame);
    }
    if (s == NST_OK)
        s = nst_clip_writer_finish(w);
    else if (w)
        nst_clip_writer_abort(w);
    free(desc);
    *seconds = nst_now() - t0;
    return s;
}
