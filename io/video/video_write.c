/* io/video/video_write.c: video files written through FFmpeg (libswscale to the codec's YUV, libavcodec
 * encodes, libavformat muxes), with the source's audio copied through (see video.h).
 *
 * Frames arrive as float RGB, are rounded to 16-bit RGB and converted with BT.709's matrix to
 * limited-range YUV (FFV1 takes the 16-bit RGB as it is, losslessly); the stream is tagged so.
 * Timestamps are frame numbers in a time base of exactly 1/rate, so 30000/1001 stays exact. The
 * muxer runs bit-exact (no random IDs, no version strings) and the encoder on a fixed number of
 * threads, so the same frames give the same bytes. Audio packets are copied, not re-encoded, as
 * the video reaches their time, shifted so that the span's start is time 0. The file is written
 * under a temporary name and renamed into place by finish. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <libavcodec/avcodec.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "../../util/mem.h"
#include "../atomic_file.h"
#include "video_av.h"
#include "video_parts.h"

typedef struct {
    const char *encoder;
    enum AVPixelFormat pix;
    const char *containers; /* the extensions it may go in */
    const char *label;      /* for messages */
} codec_info;

static const codec_info codecs[] = {
    [NST_VCODEC_H264] = {"libx264", AV_PIX_FMT_YUV420P, ".mp4 .mov .mkv", "H.264 (libx264)"},
    [NST_VCODEC_H264_10] = {"libx264", AV_PIX_FMT_YUV420P10LE, ".mp4 .mov .mkv", "10-bit H.264 (libx264)"},
    [NST_VCODEC_PRORES] = {"prores_ks", AV_PIX_FMT_YUV422P10LE, ".mov .mkv", "ProRes 422 HQ (prores_ks)"},
    [NST_VCODEC_FFV1] = {"ffv1", AV_PIX_FMT_RGB48LE, ".mkv .mov", "FFV1 (lossless 16-bit RGB)"},
};

struct nst_vfile_writer {
    char path[4096];
    nst_atomic_file af;
    const codec_info *ci;
    int w, h;
    long long n;               /* frames given */
    AVFormatContext *oc;
    AVCodecContext *enc;
    AVStream *vst;
    struct SwsContext *sws;    /* RGB48 to the codec's YUV (not for FFV1) */
    AVFrame *rgb, *pic;        /* the frame as 16-bit RGB; as the encoder takes it */
    AVPacket *pkt;
    /* the audio copied through */
    char audio_name[4200];
    AVFormatContext *ain;
    int ain_stream, a_pending, a_done;
    AVStream *ast;
    AVPacket *apkt;
    int64_t a_shift, a_len;    /* the span: source ticks a_shift .. a_shift + a_len */
};

/* ---- the checks before any rendering -------------------------------------------------------------- */

static const char *extension(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && !strchr(dot, '/') ? dot : "";
}

/* The audio stream of `from` (-1: none) in *in, opened. */
static nst_status open_audio_source(const char *from, const char *name, AVFormatContext **in, int *stream)
{
    *in = NULL;
    NST_TRY(nst_av_open(in, from, name));
    *stream = av_find_best_stream(*in, AVMEDIA_TYPE_AUDIO, -1, -1, NULL, 0);
    if (*stream < 0) *stream = -1;
    return NST_OK;
}

static int has_audio_source(const nst_clip_out_spec *s) { return s->audio_from && *s->audio_from && !nst_clip_is_pattern(s->audio_from); }

/* The source's audio codec goes into the output's container. */
static nst_status check_audio(const nst_clip_out_spec *s, const AVOutputFormat *of)
{
    if (!has_audio_source(s)) return NST_OK;
    if (!(s->audio_start >= 0) || !(s->audio_seconds >= 0))
        return nst_fail(NST_EINPUT, "%s: the audio span %g s from %g s is not a span", s->path, s->audio_seconds, s->audio_start);
    AVFormatContext *in;
    int a;
    NST_TRY(open_audio_source(s->audio_from, s->audio_from, &in, &a));
    enum AVCodecID id = a >= 0 ? in->streams[a]->codecpar->codec_id : AV_CODEC_ID_NONE;
    avformat_close_input(&in);
    if (a >= 0 && avformat_query_codec(of, id, FF_COMPLIANCE_NORMAL) == 0)
        return nst_fail(NST_EINPUT, "output.path = %s: the audio of %s (%s) cannot be copied into a %s file: write .mkv or .mov, or convert its audio to AAC",
                        s->path, s->audio_from, avcodec_get_name(id), extension(s->path));
    return NST_OK;
}

/* The codec exists in this FFmpeg and takes the pixel format it is given. */
static nst_status check_encoder(const nst_clip_out_spec *s, const codec_info *ci)
{
    const AVCodec *c = avcodec_find_encoder_by_name(ci->encoder);
    if (!c)
        return nst_fail(NST_EINPUT, "video.codec = %s: this FFmpeg has no %s encoder: install Debian's libavcodec59 (it has libx264, prores_ks and ffv1), or choose another of h264, h264-10, prores, ffv1",
                        nst_vcodec_name(s->codec), ci->encoder);
    for (const enum AVPixelFormat *p = c->pix_fmts; p && *p != AV_PIX_FMT_NONE; p++)
        if (*p == ci->pix) return NST_OK;
    return nst_fail(NST_EINPUT, "video.codec = %s: this FFmpeg's %s does not take %s frames%s", nst_vcodec_name(s->codec), ci->encoder,
                    av_get_pix_fmt_name(ci->pix), s->codec == NST_VCODEC_H264_10 ? " (a libx264 without 10-bit support): use h264 or prores" : "");
}

/* The codec against the container, the rate, the quality and the frame size it needs. */
static nst_status check_codec(const nst_clip_out_spec *s, const char *ext)
{
    if ((unsigned)s->codec >= sizeof codecs / sizeof *codecs)
        return nst_fail(NST_EINPUT, "video.codec: unknown codec %d: use h264, h264-10, prores or ffv1", (int)s->codec);
    const codec_info *ci = &codecs[s->codec];
    char lower[8];
    snprintf(lower, sizeof lower, "%s", ext);
    for (char *p = lower; *p; p++) *p = (char)tolower((unsigned char)*p);
    if (!strstr(ci->containers, lower))
        return nst_fail(NST_EINPUT, "video.codec = %s cannot go in a %s file (output.path = %s): %s goes in %s", nst_vcodec_name(s->codec), ext,
                        s->path, ci->label, ci->containers);
    if (s->fps_num < 1 || s->fps_den < 1) return nst_fail(NST_EINPUT, "%s: frame rate %d/%d: give a positive rate", s->path, s->fps_num, s->fps_den);
    if (s->threads < 0) return nst_fail(NST_EINPUT, "%s: %d encoder threads: give 0 (FFmpeg's choice) or more", s->path, s->threads);
    if (s->codec <= NST_VCODEC_H264_10 && (s->crf < 0 || s->crf > 51))
        return nst_fail(NST_EINPUT, "%s: H.264's crf %d is not in 0..51 (lower is better; 0 is lossless)", s->path, s->crf);
    /* 4:2:0 halves both sides, 4:2:2 the width */
    int odd_w = s->codec != NST_VCODEC_FFV1 && s->w % 2, odd_h = s->codec <= NST_VCODEC_H264_10 && s->h % 2;
    if (odd_w || odd_h)
        return nst_fail(NST_EINPUT, "%s: %dx%d frames: %s needs an even %s (choose ffv1, or a size of even sides)", s->path, s->w, s->h, ci->label,
                        odd_w ? "width" : "height");
    return check_encoder(s, ci);
}

nst_status nst_vfile_check_target(const nst_clip_out_spec *s)
{
    const char *ext = extension(s->path);
    if (strcasecmp(ext, ".mp4") && strcasecmp(ext, ".mov") && strcasecmp(ext, ".mkv"))
        return nst_fail(NST_EINPUT, "output.path = %s: a video is written as .mp4, .mov or .mkv; frames as a pattern such as frames/%%05d.png",
                        s->path);
    NST_TRY(check_codec(s, ext));
    const AVOutputFormat *of = av_guess_format(NULL, s->path, NULL);
    if (!of) return nst_fail(NST_EINPUT, "output.path = %s: this FFmpeg has no muxer for %s files", s->path, ext);
    NST_TRY(check_audio(s, of));
    return nst_atomic_check_target(s->path, s->overwrite);
}

/* ---- opening ------------------------------------------------------------------------------------- */

/* The encoder, its colour tags and options, and the video stream. */
static nst_status open_encoder(nst_vfile_writer *w, const nst_clip_out_spec *s)
{
    const AVCodec *c = avcodec_find_encoder_by_name(w->ci->encoder);
    w->enc = c ? avcodec_alloc_context3(c) : NULL;
    if (!w->enc) return nst_fail(NST_ENOMEM, "%s: cannot make the %s encoder", w->path, w->ci->encoder);
    AVCodecContext *e = w->enc;
    int rgb = s->codec == NST_VCODEC_FFV1;
    e->width = w->w, e->height = w->h;
    e->pix_fmt = w->ci->pix;
    e->time_base = (AVRational){s->fps_den, s->fps_num}; /* a tick per frame: pts = frame number */
    e->framerate = (AVRational){s->fps_num, s->fps_den};
    e->sample_aspect_ratio = (AVRational){1, 1};
    e->color_primaries = AVCOL_PRI_BT709, e->color_trc = AVCOL_TRC_BT709;
    e->colorspace = rgb ? AVCOL_SPC_RGB : AVCOL_SPC_BT709;
    e->color_range = rgb ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    e->thread_count = s->threads; /* fixed: x264's output depends on its thread count */
    if (w->oc->oformat->flags & AVFMT_GLOBALHEADER) e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (rgb) e->level = 3; /* FFV1 version 3: slices with CRCs */
    AVDictionary *opts = NULL;
    char crf[16];
    snprintf(crf, sizeof crf, "%d", s->crf);
    int r = s->codec == NST_VCODEC_PRORES ? av_dict_set(&opts, "profile", "hq", 0) : rgb ? 0 : av_dict_set(&opts, "crf", crf, 0);
    if (r >= 0) r = avcodec_open2(e, c, &opts);
    av_dict_free(&opts);
    if (r < 0) return nst_av_fail(NST_ERUNTIME, w->path, "cannot open the encoder", "avcodec_open2", r);
    w->vst = avformat_new_stream(w->oc, NULL);
    if (!w->vst) return nst_fail(NST_ENOMEM, "%s: out of memory for the video stream", w->path);
    r = avcodec_parameters_from_context(w->vst->codecpar, e);
    if (r < 0) return nst_av_fail(NST_ERUNTIME, w->path, "cannot describe the video stream", "avcodec_parameters_from_context", r);
    w->vst->time_base = e->time_base;
    w->vst->avg_frame_rate = w->vst->r_frame_rate = e->framerate;
    return NST_OK;
}

/* The source's audio stream as a stream of the output, copied; the span in its ticks. */
static nst_status open_audio(nst_vfile_writer *w, const nst_clip_out_spec *s)
{
    if (!has_audio_source(s)) return NST_OK;
    snprintf(w->audio_name, sizeof w->audio_name, "%s (the audio for %s)", s->audio_from, w->path);
    NST_TRY(open_audio_source(s->audio_from, w->audio_name, &w->ain, &w->ain_stream));
    if (w->ain_stream < 0) return NST_OK; /* a silent source: a silent output */
    AVStream *in = w->ain->streams[w->ain_stream];
    w->ast = avformat_new_stream(w->oc, NULL);
    w->apkt = av_packet_alloc();
    if (!w->ast || !w->apkt) return nst_fail(NST_ENOMEM, "%s: out of memory for the audio stream", w->path);
    int r = avcodec_parameters_copy(w->ast->codecpar, in->codecpar);
    if (r < 0) return nst_av_fail(NST_ERUNTIME, w->audio_name, "cannot copy the audio stream's parameters", "avcodec_parameters_copy", r);
    w->ast->codecpar->codec_tag = 0; /* the output container chooses its own */
    w->ast->time_base = in->time_base;
    /* the span is measured from the start of the source's video, as its frames are */
    int v = av_find_best_stream(w->ain, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    AVStream *vs = v >= 0 ? w->ain->streams[v] : NULL;
    int64_t t0 = vs && vs->start_time != AV_NOPTS_VALUE ? av_rescale_q(vs->start_time, vs->time_base, in->time_base) : 0;
    w->a_shift = t0 + av_rescale_q(llround(s->audio_start * 1e6), AV_TIME_BASE_Q, in->time_base);
    w->a_len = av_rescale_q(llround(s->audio_seconds * 1e6), AV_TIME_BASE_Q, in->time_base);
    /* a second before the span, not from the source's start; where it cannot seek, it is opened
     * again and read from its start (slower, the same packets) */
    int64_t early = w->a_shift - av_rescale_q(1, (AVRational){1, 1}, in->time_base);
    if (s->audio_start > 1 && av_seek_frame(w->ain, w->ain_stream, early, AVSEEK_FLAG_BACKWARD) < 0) {
        int a = w->ain_stream;
        avformat_close_input(&w->ain);
        NST_TRY(open_audio_source(s->audio_from, w->audio_name, &w->ain, &w->ain_stream));
        if (w->ain_stream != a) return nst_fail(NST_EINPUT, "%s: its streams changed between two openings", w->audio_name);
    }
    for (unsigned i = 0; i < w->ain->nb_streams; i++) /* its video is not read */
        if ((int)i != w->ain_stream) w->ain->streams[i]->discard = AVDISCARD_ALL;
    return NST_OK;
}

/* The frames the encoder is given: 16-bit RGB, and its own format through swscale with BT.709's
 * matrix into limited range. */
static nst_status open_frames(nst_vfile_writer *w)
{
    w->pkt = av_packet_alloc();
    w->pic = av_frame_alloc();
    if (!w->pkt || !w->pic) return nst_fail(NST_ENOMEM, "%s: out of memory for frames", w->path);
    w->pic->format = w->enc->pix_fmt, w->pic->width = w->w, w->pic->height = w->h;
    /* the tags on each frame too: ProRes writes them into its frame headers from there */
    w->pic->color_primaries = w->enc->color_primaries, w->pic->color_trc = w->enc->color_trc;
    w->pic->colorspace = w->enc->colorspace, w->pic->color_range = w->enc->color_range;
    int r = av_frame_get_buffer(w->pic, 0);
    if (r < 0) return nst_av_fail(NST_ERUNTIME, w->path, "cannot allocate a frame", "av_frame_get_buffer", r);
    if (w->enc->pix_fmt == AV_PIX_FMT_RGB48) return NST_OK; /* FFV1 on a little-endian machine: filled directly */
    w->rgb = av_frame_alloc();
    if (!w->rgb) return nst_fail(NST_ENOMEM, "%s: out of memory for frames", w->path);
    w->rgb->format = AV_PIX_FMT_RGB48, w->rgb->width = w->w, w->rgb->height = w->h;
    r = av_frame_get_buffer(w->rgb, 0);
    if (r < 0) return nst_av_fail(NST_ERUNTIME, w->path, "cannot allocate a frame", "av_frame_get_buffer", r);
    w->sws = sws_getContext(w->w, w->h, AV_PIX_FMT_RGB48, w->w, w->h, w->enc->pix_fmt, SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP,
                            NULL, NULL, NULL);
    if (!w->sws) return nst_fail(NST_ERUNTIME, "%s: cannot convert RGB to %s (sws_getContext failed)", w->path, av_get_pix_fmt_name(w->enc->pix_fmt));
    const int *bt709 = sws_getCoefficients(SWS_CS_ITU709);
    if (sws_setColorspaceDetails(w->sws, bt709, 1, bt709, 0, 0, 1 << 16, 1 << 16) < 0)
        return nst_fail(NST_ERUNTIME, "%s: cannot set BT.709 for %s (sws_setColorspaceDetails failed)", w->path, av_get_pix_fmt_name(w->enc->pix_fmt));
    return NST_OK;
}

/* Everything freed; the temporary file stays (finish renames it, abort removes it). */
static void free_writer(nst_vfile_writer *w)
{
    if (w->oc && w->oc->pb) avio_closep(&w->oc->pb);
    avformat_free_context(w->oc);
    avcodec_free_context(&w->enc);
    sws_freeContext(w->sws);
    av_frame_free(&w->rgb);
    av_frame_free(&w->pic);
    av_packet_free(&w->pkt);
    av_packet_free(&w->apkt);
    avformat_close_input(&w->ain);
    nst_free(w);
}

nst_status nst_vfile_writer_open(const nst_clip_out_spec *s, nst_vfile_writer **out)
{
    *out = NULL;
    nst_av_quiet();
    nst_vfile_writer *w = nst_calloc(sizeof *w, "a video writer");
    if (!w) return NST_ENOMEM;
    snprintf(w->path, sizeof w->path, "%s", s->path);
    w->ci = &codecs[s->codec], w->w = s->w, w->h = s->h;
    nst_status st = nst_atomic_begin(&w->af, s->path, s->overwrite);
    if (st != NST_OK) {
        nst_free(w);
        return st;
    }
    /* the temporary name has no meaningful extension: the format comes from the final name */
    int r = avformat_alloc_output_context2(&w->oc, av_guess_format(NULL, s->path, NULL), NULL, w->af.tmp);
    if (r < 0) st = nst_av_fail(NST_ERUNTIME, s->path, "cannot make the muxer", "avformat_alloc_output_context2", r);
    if (st == NST_OK) {
        w->oc->flags |= AVFMT_FLAG_BITEXACT; /* no random UIDs or version strings: the same frames give the same bytes */
        st = open_encoder(w, s);
    }
    if (st == NST_OK) st = open_audio(w, s);
    if (st == NST_OK) st = open_frames(w);
    if (st == NST_OK && s->comment && (r = av_dict_set(&w->oc->metadata, "comment", s->comment, 0)) < 0)
        st = nst_av_fail(NST_ERUNTIME, s->path, "cannot store the comment", "av_dict_set", r);
    if (st == NST_OK && (r = avio_open(&w->oc->pb, w->af.tmp, AVIO_FLAG_WRITE)) < 0)
        st = nst_av_fail(NST_ERUNTIME, s->path, "cannot open the temporary file", "avio_open", r);
    if (st == NST_OK && (r = avformat_write_header(w->oc, NULL)) < 0)
        st = nst_av_fail(NST_ERUNTIME, s->path, "cannot write the header", "avformat_write_header", r);
    if (st != NST_OK) {
        nst_vfile_writer_abort(w);
        return st;
    }
    *out = w;
    return NST_OK;
}

/* ---- writing ------------------------------------------------------------------------------------- */

/* The source's audio packets up to video time `until` (in frames; -1: the whole span), shifted to
 * the span's start and into the output's time base. A packet beyond `until` waits for the video. */
static nst_status copy_audio(nst_vfile_writer *w, long long until)
{
    if (!w->ast) return NST_OK;
    AVRational tb = w->ain->streams[w->ain_stream]->time_base;
    int64_t limit = until < 0 ? w->a_len : av_rescale_q(until, w->enc->time_base, tb);
    while (!w->a_done) {
        if (!w->a_pending) {
            int r = av_read_frame(w->ain, w->apkt);
            if (r == AVERROR_EOF) break;
            if (r < 0) return nst_av_fail(NST_EINPUT, w->audio_name, "cannot read its audio (damaged?)", "av_read_frame", r);
            w->a_pending = w->apkt->stream_index == w->ain_stream && w->apkt->pts != AV_NOPTS_VALUE;
            if (!w->a_pending) av_packet_unref(w->apkt);
            continue;
        }
        AVPacket *p = w->apkt;
        int64_t t = p->pts - w->a_shift; /* the packet's time in the span */
        if (t >= w->a_len) w->a_done = 1; /* packets come in time order: the span is over */
        if (t >= w->a_len || t >= limit) break;
        w->a_pending = 0;
        if (t < 0) { /* before the span */
            av_packet_unref(p);
            continue;
        }
        p->pts = t;
        p->dts = p->dts == AV_NOPTS_VALUE ? AV_NOPTS_VALUE : p->dts - w->a_shift;
        av_packet_rescale_ts(p, tb, w->ast->time_base);
        p->stream_index = w->ast->index, p->pos = -1;
        int r = av_interleaved_write_frame(w->oc, p); /* takes the packet's data */
        if (r < 0) return nst_av_fail(NST_ERUNTIME, w->path, "cannot write audio", "av_interleaved_write_frame", r);
    }
    return NST_OK;
}

/* frame (NULL: the end) into the encoder, and every packet it gives out into the file. */
static nst_status encode(nst_vfile_writer *w, const AVFrame *frame)
{
    int r = avcodec_send_frame(w->enc, frame);
    if (r < 0) return nst_av_fail(NST_ERUNTIME, w->path, "cannot encode a frame", "avcodec_send_frame", r);
    for (;;) {
        r = avcodec_receive_packet(w->enc, w->pkt);
        if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return NST_OK;
        if (r < 0) return nst_av_fail(NST_ERUNTIME, w->path, "cannot encode a frame", "avcodec_receive_packet", r);
        av_packet_rescale_ts(w->pkt, w->enc->time_base, w->vst->time_base);
        w->pkt->stream_index = w->vst->index;
        r = av_interleaved_write_frame(w->oc, w->pkt);
        if (r < 0) return nst_av_fail(NST_ERUNTIME, w->path, "cannot write video", "av_interleaved_write_frame", r);
    }
}

nst_status nst_vfile_writer_put(nst_vfile_writer *w, const nst_image *frame)
{
    if (frame->w != w->w || frame->h != w->h)
        return nst_fail(NST_ERUNTIME, "%s: a %dx%d frame given to a %dx%d video", w->path, frame->w, frame->h, w->w, w->h);
    int r = av_frame_make_writable(w->pic); /* the encoder may still hold the last one */
    if (r < 0) return nst_av_fail(NST_ERUNTIME, w->path, "cannot reuse a frame", "av_frame_make_writable", r);
    AVFrame *rgb = w->rgb ? w->rgb : w->pic;
    for (int y = 0; y < w->h; y++) nst_image_get_row(frame, y, 16, rgb->data[0] + (size_t)y * rgb->linesize[0]);
    if (w->sws) {
        r = sws_scale(w->sws, (const uint8_t *const *)rgb->data, rgb->linesize, 0, w->h, w->pic->data, w->pic->linesize);
        if (r != w->h) return nst_av_fail(NST_ERUNTIME, w->path, "cannot convert a frame", "sws_scale", r < 0 ? r : AVERROR_BUG);
    }
    w->pic->pts = w->n++;
    NST_TRY(encode(w, w->pic));
    return copy_audio(w, w->n);
}

nst_status nst_vfile_writer_finish(nst_vfile_writer *w)
{
    nst_status s = encode(w, NULL);
    if (s == NST_OK) s = copy_audio(w, -1);
    int r = s == NST_OK ? av_write_trailer(w->oc) : 0;
    if (r < 0) s = nst_av_fail(NST_ERUNTIME, w->path, "cannot finish the file", "av_write_trailer", r);
    r = s == NST_OK ? avio_closep(&w->oc->pb) : 0;
    if (r < 0) s = nst_av_fail(NST_ERUNTIME, w->path, "cannot write the file", "avio_closep", r);
    nst_atomic_file af = w->af;
    free_writer(w);
    if (s != NST_OK) {
        nst_atomic_abort(&af);
        return s;
    }
    return nst_atomic_commit(&af);
}

void nst_vfile_writer_abort(nst_vfile_writer *w)
{
    if (!w) return;
    nst_atomic_file af = w->af;
    free_writer(w);
    nst_atomic_abort(&af);
}
