/* io/video/video_read.c: video files read through FFmpeg (libavformat demuxes, libavcodec decodes,
 * libswscale converts to RGB), frame by frame into float RGB (see video.h).
 *
 * Opening makes one pass over the packets without decoding: it counts the video frames exactly
 * and collects their timestamps, which must be evenly spaced (a variable rate is refused: frame
 * i of the clip must be a fixed time after frame 0). Then the file is opened again and decoded
 * forward. Frames are converted by the colour matrix and range they are tagged with (untagged:
 * BT.709 for HD sizes, BT.601 below), to 16-bit RGB where the source has more than 8 bits. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "../../util/mem.h"
#include "video_av.h"
#include "video_parts.h"

/* the demuxers of .mp4/.mov/.m4v, .mkv/.webm, .avi, .mpg, .ts, .mxf, .y4m */
#define NST_DEMUXERS "mov,matroska,avi,mpeg,mpegts,mxf,yuv4mpegpipe"

typedef struct {
    const unsigned char *buf;
    size_t len;
    int64_t pos;
} mem_source;

struct nst_vfile_reader {
    char path[4096], name[4200];
    int in_memory;
    mem_source mem;
    AVFormatContext *fmt;
    AVIOContext *avio;       /* in memory: ours to free */
    AVCodecContext *dec;
    AVPacket *pkt;
    AVFrame *frame;
    int stream;
    int w, h;
    long long frames, next;  /* next: the number of the frame the decoder gives next */
    int flushing;            /* the demuxer is at its end; the decoder is being drained */
    struct SwsContext *sws;
    int sws_key[3];          /* the pixel format, matrix and range sws was made for */
    uint8_t *rgb;
    int rgb_stride;
};

/* ---- shared with the writer (video_av.h) --------------------------------------------------------- */

void nst_av_quiet(void) { av_log_set_level(AV_LOG_QUIET); }

nst_status nst_av_fail(nst_status kind, const char *name, const char *what, const char *call, int err)
{
    char text[AV_ERROR_MAX_STRING_SIZE] = "";
    if (av_strerror(err, text, sizeof text) < 0) snprintf(text, sizeof text, "error %d", err);
    /* reading, an allocation refused is most often a size in the file beyond the cap (cap_allocations) */
    int nomem = err == AVERROR(ENOMEM);
    return nst_fail(nomem && kind != NST_EINPUT ? NST_ENOMEM : kind, "%s: %s (%s: %s%s)", name, what, call, text,
                    nomem && kind == NST_EINPUT ? ": a size in it beyond what FFmpeg may allocate at once, or memory ran out" : "");
}

nst_status nst_av_open(AVFormatContext **fmt, const char *url, const char *name)
{
    nst_av_quiet();
    if (!*fmt && !(*fmt = avformat_alloc_context())) return nst_fail(NST_ENOMEM, "%s: out of memory for FFmpeg's reader", name);
    (*fmt)->flags |= AVFMT_FLAG_GENPTS; /* a packet without a pts (MPEG-PS) gets one from the dts, in display order */
    AVDictionary *opts = NULL;
    int e = av_dict_set(&opts, "format_whitelist", NST_DEMUXERS, 0);
    if (e >= 0) e = av_dict_set(&opts, "protocol_whitelist", "file", 0);
    if (e < 0) {
        av_dict_free(&opts);
        avformat_free_context(*fmt);
        *fmt = NULL;
        return nst_av_fail(NST_ERUNTIME, name, "cannot set the reader's options", "av_dict_set", e);
    }
    e = avformat_open_input(fmt, url, NULL, &opts);
    av_dict_free(&opts);
    if (e < 0)
        return nst_av_fail(NST_EINPUT, name, "cannot open it as a video (.mp4, .mov, .mkv, .webm, .avi, .mpg, .ts, .mxf or .y4m)",
                           "avformat_open_input", e);
    /* this fails where a stream's parameters are still unknown at the end of a very short file;
     * as with the ffmpeg program that is no error of its own (a stream without a frame size is
     * refused later), only running out of memory is */
    e = avformat_find_stream_info(*fmt, NULL);
    if (e == AVERROR(ENOMEM)) {
        avformat_close_input(fmt);
        return nst_av_fail(NST_ENOMEM, name, "cannot read its streams", "avformat_find_stream_info", e);
    }
    return NST_OK;
}

/* ---- opening: from a file or from memory ---------------------------------------------------------- */

static int mem_read(void *opaque, uint8_t *buf, int size)
{
    mem_source *m = opaque;
    if (m->pos >= (int64_t)m->len) return AVERROR_EOF;
    size_t n = m->len - (size_t)m->pos < (size_t)size ? m->len - (size_t)m->pos : (size_t)size;
    memcpy(buf, m->buf + m->pos, n);
    m->pos += (int64_t)n;
    return (int)n;
}

static int64_t mem_seek(void *opaque, int64_t offset, int whence)
{
    mem_source *m = opaque;
    if (whence & AVSEEK_SIZE) return (int64_t)m->len;
    whence &= ~AVSEEK_FORCE;
    int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : whence == SEEK_END ? (int64_t)m->len : -1;
    if (base < 0 || offset < -base || offset > (int64_t)m->len - base) return AVERROR(EINVAL);
    m->pos = base + offset;
    return m->pos;
}

static void close_input(nst_vfile_reader *r)
{
    avformat_close_input(&r->fmt);
    if (r->avio) av_freep(&r->avio->buffer); /* FFmpeg may have replaced the buffer we gave it */
    avio_context_free(&r->avio);
}

/* Open the file (or the memory, from its start) and choose its video stream. */
static nst_status open_input(nst_vfile_reader *r)
{
    if (r->in_memory) {
        enum { AVIO_BUF = 1 << 14 };
        unsigned char *buf = av_malloc(AVIO_BUF);
        r->fmt = avformat_alloc_context();
        r->mem.pos = 0;
        r->avio = buf && r->fmt ? avio_alloc_context(buf, AVIO_BUF, 0, &r->mem, mem_read, NULL, mem_seek) : NULL;
        if (!r->avio) {
            av_free(buf);
            avformat_free_context(r->fmt);
            r->fmt = NULL;
            return nst_fail(NST_ENOMEM, "%s: out of memory for FFmpeg's reader", r->name);
        }
        r->fmt->pb = r->avio;
    }
    NST_TRY(nst_av_open(&r->fmt, r->in_memory ? "" : r->path, r->name));
    r->stream = av_find_best_stream(r->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (r->stream < 0 || r->fmt->streams[r->stream]->disposition & AV_DISPOSITION_ATTACHED_PIC)
        return nst_fail(NST_EINPUT, "%s: no video stream in it (%s)", r->name, r->fmt->iformat->name);
    return NST_OK;
}

/* The frame size against the limits, before the decoder allocates anything. */
static nst_status check_size(const nst_vfile_reader *r, const AVCodecParameters *par, const nst_clip_limits *lim)
{
    if (par->width < 1 || par->height < 1) return nst_fail(NST_EINPUT, "%s: its video stream has no frame size (damaged?)", r->name);
    if (par->width > lim->max_side || par->height > lim->max_side)
        return nst_fail(NST_EINPUT, "%s: frames are %dx%d; the longest side allowed is %d pixels", r->name, par->width, par->height,
                        lim->max_side);
    if ((double)par->width * par->height > lim->max_pixels)
        return nst_fail(NST_EINPUT, "%s: frames are %dx%d = %.1f megapixels, above the limit of %g", r->name, par->width, par->height,
                        (double)par->width * par->height / 1e6, lim->max_pixels / 1e6);
    return NST_OK;
}

/* ---- the packet pass: the exact count and the constant rate --------------------------------------- */

#define TS_LIMIT ((int64_t)1 << 61) /* timestamps beyond it are damage (and would overflow differences) */

/* Every video packet's timestamp (pts, else dts) in *ts; *untimed counts those without one, *all
 * the packets with those the demuxer marks to be dropped (before an edit list's start). */
static nst_status scan_packets(nst_vfile_reader *r, long long max_frames, nst_ll_list *ts, long long *untimed, long long *all)
{
    for (;;) {
        int e = av_read_frame(r->fmt, r->pkt);
        if (e == AVERROR_EOF) return NST_OK;
        if (e < 0) return nst_av_fail(NST_EINPUT, r->name, "cannot read it to the end (damaged or truncated?)", "av_read_frame", e);
        int video = r->pkt->stream_index == r->stream, flags = r->pkt->flags;
        int64_t t = r->pkt->pts != AV_NOPTS_VALUE ? r->pkt->pts : r->pkt->dts;
        av_packet_unref(r->pkt);
        if (!video) continue;
        if (flags & AV_PKT_FLAG_CORRUPT) return nst_fail(NST_EINPUT, "%s: frame %lld is damaged (truncated?)", r->name, *all);
        ++*all;
        if (flags & AV_PKT_FLAG_DISCARD) continue;
        if ((long long)ts->n + *untimed >= max_frames)
            return nst_fail(NST_EINPUT, "%s: more than %lld frames, the limit for a clip", r->name, max_frames);
        if (t == AV_NOPTS_VALUE) ++*untimed;
        else if (t > TS_LIMIT || t < -TS_LIMIT) return nst_fail(NST_EINPUT, "%s: a frame's timestamp %lld is out of range (damaged?)", r->name, (long long)t);
        else NST_TRY(nst_ll_append(ts, t, "the frames' timestamps"));
    }
}

/* 1 where rate q spaces n frames over span ticks of tb, within a tick (each timestamp is rounded). */
static int rate_fits(AVRational q, AVRational tb, long long span, long long n)
{
    if (q.num <= 0 || q.den <= 0) return 0;
    double expect = (double)(n - 1) * q.den * tb.den / ((double)q.num * tb.num);
    return fabs((double)span - expect) <= 1.0;
}

static nst_status refuse_rate(const nst_vfile_reader *r, const char *why)
{
    AVRational avg = r->fmt->streams[r->stream]->avg_frame_rate;
    int ok = avg.num > 0 && avg.den > 0;
    return nst_fail(NST_EINPUT, "%s: %s: nstbatch needs a constant frame rate; convert it first, e.g. ffmpeg -i %s -fps_mode cfr -r %d/%d OUT.mkv",
                    r->name, why, r->path, ok ? avg.num : 30, ok ? avg.den : 1);
}

/* The exact rate from n sorted timestamps: evenly spaced within a tick, else refused. The
 * stream's declared rates are taken where they fit the spacing, then the NTSC family (N/1001). */
static nst_status find_rate(nst_vfile_reader *r, const nst_ll_list *ts, long long untimed, AVRational *rate)
{
    AVStream *st = r->fmt->streams[r->stream];
    AVRational tb = st->time_base, tries[4] = {st->r_frame_rate, st->avg_frame_rate, {0, 1}, {0, 1}};
    long long n = (long long)ts->n;
    if (n >= 2 && untimed) return refuse_rate(r, "some of its frames have no timestamp, so its rate cannot be checked");
    if (n < 2) { /* nothing to measure: what the file declares */
        for (int i = 0; i < 2; i++)
            if (tries[i].num > 0 && tries[i].den > 0) {
                *rate = tries[i];
                return NST_OK;
            }
        return refuse_rate(r, "it declares no frame rate");
    }
    long long dmin = LLONG_MAX, dmax = 0;
    for (long long i = 1; i < n; i++) {
        long long d = ts->v[i] - ts->v[i - 1];
        dmin = d < dmin ? d : dmin, dmax = d > dmax ? d : dmax;
    }
    char why[160];
    snprintf(why, sizeof why, "variable frame rate (frames %.4g to %.4g ms apart)", 1e3 * dmin * av_q2d(tb), 1e3 * dmax * av_q2d(tb));
    if (dmin < 1 || dmax - dmin > 1) return refuse_rate(r, why);
    long long span = ts->v[n - 1] - ts->v[0];
    double mean = (double)(n - 1) / (span * av_q2d(tb));
    if (!(mean > 1e-3 && mean < 1e6)) return refuse_rate(r, "its frame rate is out of range");
    tries[2] = (AVRational){(int)llround(mean), 1}, tries[3] = (AVRational){(int)llround(mean * 1001), 1001};
    for (int i = 0; i < 4; i++)
        if (rate_fits(tries[i], tb, span, n)) {
            *rate = tries[i];
            return NST_OK;
        }
    *rate = av_d2q(mean, 1 << 20); /* none fits: the spacing's own rate, as exactly as a rational gives it */
    return NST_OK;
}

/* A file cut short may still hold whole frames, which the demuxer gives without complaint: the
 * packets against what the stream itself declares (its number of frames in an index, or
 * Matroska's per-track duration), so that it is refused rather than read as a shorter clip. A
 * duration FFmpeg estimates (from the bit rate, or the longest stream) is not used. */
static nst_status check_complete(const nst_vfile_reader *r, long long packets, AVRational rate)
{
    const AVStream *st = r->fmt->streams[r->stream];
    if (st->nb_frames > 0) {
        if (packets >= st->nb_frames) return NST_OK;
        return nst_fail(NST_EINPUT, "%s: it holds %lld of the %lld frames it declares (truncated?)", r->name, packets, (long long)st->nb_frames);
    }
    const AVDictionaryEntry *tag = av_dict_get(st->metadata, "DURATION", NULL, 0);
    int hh, mm;
    double ss;
    if (!tag || sscanf(tag->value, "%d:%d:%lf", &hh, &mm, &ss) != 3) return NST_OK;
    double secs = hh * 3600.0 + mm * 60.0 + ss, declared = secs * av_q2d(rate);
    if (r->frames + 1 >= declared) return NST_OK; /* a frame's slack for rounding */
    return nst_fail(NST_EINPUT, "%s: it holds %lld frames but its track declares %.3f s, %.0f frames (truncated?)", r->name, r->frames, secs,
                    declared);
}

/* The pass: count, rate, then the file opened again at its start for decoding. */
static nst_status count_frames(nst_vfile_reader *r, const nst_clip_limits *lim, AVRational *rate)
{
    nst_ll_list ts = {0};
    long long untimed = 0, packets = 0;
    nst_status s = scan_packets(r, lim->max_frames, &ts, &untimed, &packets);
    r->frames = (long long)ts.n + untimed;
    if (s == NST_OK && !r->frames) s = nst_fail(NST_EINPUT, "%s: its video stream has no frames", r->name);
    if (s == NST_OK) {
        if (ts.n) qsort(ts.v, ts.n, sizeof *ts.v, nst_ll_cmp); /* decoding order is not display order */
        s = find_rate(r, &ts, untimed, rate);
    }
    if (s == NST_OK) s = check_complete(r, packets, *rate);
    nst_free(ts.v);
    if (s != NST_OK) return s;
    int stream = r->stream;
    close_input(r);
    NST_TRY(open_input(r));
    if (r->stream != stream) return nst_fail(NST_EINPUT, "%s: its streams changed between two openings", r->name);
    return NST_OK;
}

/* ---- decoding ------------------------------------------------------------------------------------- */

static nst_status open_decoder(nst_vfile_reader *r, const nst_clip_limits *lim)
{
    const AVCodecParameters *par = r->fmt->streams[r->stream]->codecpar;
    const AVCodec *codec = avcodec_find_decoder(par->codec_id);
    if (!codec) return nst_fail(NST_EINPUT, "%s: this FFmpeg has no decoder for its video codec (%s)", r->name, avcodec_get_name(par->codec_id));
    r->dec = avcodec_alloc_context3(codec);
    if (!r->dec) return nst_fail(NST_ENOMEM, "%s: out of memory for the decoder", r->name);
    int e = avcodec_parameters_to_context(r->dec, par);
    if (e < 0) return nst_av_fail(NST_EINPUT, r->name, "cannot set up its decoder", "avcodec_parameters_to_context", e);
    r->dec->pkt_timebase = r->fmt->streams[r->stream]->time_base;
    /* the decoder's own allocations stay within the limit too */
    r->dec->max_pixels = lim->max_pixels < 9e18 ? (int64_t)lim->max_pixels : INT64_MAX;
    e = avcodec_open2(r->dec, codec, NULL);
    if (e < 0) return nst_av_fail(NST_EINPUT, r->name, "cannot open its decoder", "avcodec_open2", e);
    return NST_OK;
}

/* The next frame into r->frame (a packet at a time; at the demuxer's end the decoder is drained). */
static nst_status decode_next(nst_vfile_reader *r)
{
    for (;;) {
        int e = avcodec_receive_frame(r->dec, r->frame);
        if (e >= 0) return NST_OK;
        if (e == AVERROR_EOF)
            return nst_fail(NST_EINPUT, "%s: only %lld of its %lld frames could be decoded (damaged?)", r->name, r->next, r->frames);
        if (e != AVERROR(EAGAIN)) return nst_av_fail(NST_EINPUT, r->name, "cannot decode a frame (damaged?)", "avcodec_receive_frame", e);
        e = r->flushing ? AVERROR_EOF : av_read_frame(r->fmt, r->pkt);
        if (e == AVERROR_EOF) {
            r->flushing = 1;
            e = avcodec_send_packet(r->dec, NULL);
            if (e < 0 && e != AVERROR_EOF) return nst_av_fail(NST_EINPUT, r->name, "cannot drain the decoder", "avcodec_send_packet", e);
            continue;
        }
        if (e < 0) return nst_av_fail(NST_EINPUT, r->name, "cannot read a frame (damaged or truncated?)", "av_read_frame", e);
        e = r->pkt->stream_index == r->stream ? avcodec_send_packet(r->dec, r->pkt) : 0;
        av_packet_unref(r->pkt);
        if (e < 0) return nst_av_fail(NST_EINPUT, r->name, "cannot decode a frame (damaged?)", "avcodec_send_packet", e);
    }
}

/* The colour matrix to convert by: the frame's tag, else BT.709 for HD sizes and BT.601 below
 * (what untagged video has been made with). sws_getCoefficients takes AVColorSpace's numbers. */
static int frame_matrix(const AVFrame *f)
{
    switch (f->colorspace) {
    case AVCOL_SPC_BT709: case AVCOL_SPC_FCC: case AVCOL_SPC_BT470BG: case AVCOL_SPC_SMPTE170M:
    case AVCOL_SPC_SMPTE240M: case AVCOL_SPC_BT2020_NCL: case AVCOL_SPC_BT2020_CL:
        return f->colorspace;
    default:
        return f->width > 1024 || f->height > 576 ? SWS_CS_ITU709 : SWS_CS_ITU601;
    }
}

/* The deprecated full-range "J" formats as their plain format with full range. */
static enum AVPixelFormat plain_format(enum AVPixelFormat f, int *full)
{
    static const enum AVPixelFormat j[][2] = {{AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUV420P}, {AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUV422P},
                                              {AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_YUV444P}, {AV_PIX_FMT_YUVJ440P, AV_PIX_FMT_YUV440P},
                                              {AV_PIX_FMT_YUVJ411P, AV_PIX_FMT_YUV411P}};
    for (size_t i = 0; i < sizeof j / sizeof *j; i++)
        if (f == j[i][0]) {
            *full = 1;
            return j[i][1];
        }
    return f;
}

/* The converter for this frame's format, matrix and range (made again only when they change),
 * to RGB24, or native 16-bit RGB48 for sources of more than 8 bits. */
static nst_status setup_sws(nst_vfile_reader *r, const AVFrame *f, int *deep)
{
    int full = f->color_range == AVCOL_RANGE_JPEG;
    enum AVPixelFormat src = plain_format((enum AVPixelFormat)f->format, &full);
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(src);
    if (!d) return nst_fail(NST_EINPUT, "%s: a frame has no pixel format (damaged?)", r->name);
    *deep = d->comp[0].depth > 8;
    int key[3] = {src, frame_matrix(f), full};
    if (r->sws && !memcmp(key, r->sws_key, sizeof key)) return NST_OK;
    sws_freeContext(r->sws);
    r->sws = sws_getContext(r->w, r->h, src, r->w, r->h, *deep ? AV_PIX_FMT_RGB48 : AV_PIX_FMT_RGB24,
                            SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL, NULL);
    if (!r->sws) return nst_fail(NST_EINPUT, "%s: cannot convert its pixel format %s to RGB (sws_getContext failed)", r->name, d->name);
    memcpy(r->sws_key, key, sizeof key);
    if (!(d->flags & AV_PIX_FMT_FLAG_RGB) &&
        sws_setColorspaceDetails(r->sws, sws_getCoefficients(key[1]), full, sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16) < 0)
        return nst_fail(NST_EINPUT, "%s: cannot convert %s with its colour matrix (sws_setColorspaceDetails failed)", r->name, d->name);
    return NST_OK;
}

/* r->frame as float RGB. */
static nst_status to_image(nst_vfile_reader *r, nst_image *out)
{
    const AVFrame *f = r->frame;
    if (f->width != r->w || f->height != r->h)
        return nst_fail(NST_EINPUT, "%s: frame %lld is %dx%d, the stream %dx%d: a clip has one frame size", r->name, r->next - 1, f->width,
                        f->height, r->w, r->h);
    int deep = 0;
    NST_TRY(setup_sws(r, f, &deep));
    if (!r->rgb) {
        r->rgb_stride = (r->w * 6 + 63) & ~63; /* room for RGB48, rows aligned for swscale */
        r->rgb = nst_alloc_array((size_t)r->h, (size_t)r->rgb_stride, "a decoded frame");
        if (!r->rgb) return NST_ENOMEM;
    }
    uint8_t *dst[4] = {r->rgb};
    int stride[4] = {r->rgb_stride};
    int e = sws_scale(r->sws, (const uint8_t *const *)f->data, f->linesize, 0, r->h, dst, stride);
    if (e != r->h) return nst_av_fail(NST_EINPUT, r->name, "cannot convert a frame to RGB", "sws_scale", e < 0 ? e : AVERROR_BUG);
    NST_TRY(nst_image_alloc(out, r->w, r->h));
    for (int y = 0; y < r->h; y++) nst_image_put_row(out, y, 0, r->w, r->rgb + (size_t)y * r->rgb_stride, 3, deep ? 16 : 8);
    return NST_OK;
}

/* ---- the interface ------------------------------------------------------------------------------- */

/* "h264 (High), yuv420p, 1920x1080, 30000/1001 fps, 300 frames, aac audio" (video.h) */
static void describe(const nst_vfile_reader *r, nst_clip_info *info)
{
    const AVCodecParameters *par = r->fmt->streams[r->stream]->codecpar;
    const char *profile = avcodec_profile_name(par->codec_id, par->profile);
    const char *pix = av_get_pix_fmt_name((enum AVPixelFormat)par->format);
    int a = av_find_best_stream(r->fmt, AVMEDIA_TYPE_AUDIO, -1, -1, NULL, 0);
    info->has_audio = a >= 0;
    snprintf(info->detail, sizeof info->detail, "%s%s%s%s, %s, %dx%d, %d/%d fps, %lld frames%s%s%s", avcodec_get_name(par->codec_id),
             profile ? " (" : "", profile ? profile : "", profile ? ")" : "", pix ? pix : "unknown pixels", r->w, r->h, info->fps_num,
             info->fps_den, r->frames, a >= 0 ? ", " : "", a >= 0 ? avcodec_get_name(r->fmt->streams[a]->codecpar->codec_id) : "",
             a >= 0 ? " audio" : "");
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)par->format);
    info->bits = d ? d->comp[0].depth : 8;
}

/* FFmpeg's largest single allocation (a process-wide setting of libavutil): a few kilobytes of
 * Matroska can ask for a gigabyte before anything is checked (found by fuzz_video). 16 bytes a
 * pixel of the largest frame allowed holds any frame buffer, 256 MiB at least. */
static void cap_allocations(const nst_clip_limits *lim)
{
    double cap = 16 * lim->max_pixels;
    av_max_alloc(cap < 256.0 * (1 << 20) ? (size_t)256 << 20 : cap > INT_MAX ? (size_t)INT_MAX : (size_t)cap);
}

nst_status nst_vfile_open(const char *path, const unsigned char *buf, size_t len, const nst_clip_limits *lim, nst_vfile_reader **out,
                          nst_clip_info *info)
{
    *out = NULL;
    cap_allocations(lim);
    nst_vfile_reader *r = nst_calloc(sizeof *r, "a video reader");
    if (!r) return NST_ENOMEM;
    snprintf(r->path, sizeof r->path, "%s", path);
    nst_clip_display_name(r->name, sizeof r->name, path, lim->key);
    r->in_memory = buf != NULL;
    r->mem = (mem_source){buf, len, 0};
    r->pkt = av_packet_alloc();
    r->frame = av_frame_alloc();
    AVRational rate = {0, 1};
    nst_status s = r->pkt && r->frame ? NST_OK : nst_fail(NST_ENOMEM, "%s: out of memory for FFmpeg's packets", r->name);
    if (s == NST_OK) s = open_input(r);
    if (s == NST_OK) {
        const AVCodecParameters *par = r->fmt->streams[r->stream]->codecpar;
        s = check_size(r, par, lim);
        r->w = par->width, r->h = par->height;
    }
    if (s == NST_OK) s = count_frames(r, lim, &rate);
    if (s == NST_OK) s = open_decoder(r, lim);
    if (s != NST_OK) {
        nst_vfile_close(r);
        return s;
    }
    *info = (nst_clip_info){.w = r->w, .h = r->h, .fps_num = rate.num, .fps_den = rate.den, .frames = r->frames, .is_video = 1};
    describe(r, info);
    *out = r;
    return NST_OK;
}

nst_status nst_vfile_read(nst_vfile_reader *r, long long index, nst_image *out)
{
    if (index < 0 || index >= r->frames)
        return nst_fail(NST_EINPUT, "%s: frame %lld asked of a clip of %lld frames", r->name, index, r->frames);
    if (index < r->next - 1 || (index == r->next - 1 && !r->frame->data[0]))
        return nst_fail(NST_ERUNTIME, "%s: frame %lld asked after frame %lld: a video is read forward", r->name, index, r->next - 1);
    while (r->next <= index) { /* the frames before it are decoded and dropped */
        av_frame_unref(r->frame);
        NST_TRY(decode_next(r));
        r->next++;
    }
    return to_image(r, out);
}

void nst_vfile_close(nst_vfile_reader *r)
{
    if (!r) return;
    sws_freeContext(r->sws);
    nst_free(r->rgb);
    av_frame_free(&r->frame);
    av_packet_free(&r->pkt);
    avcodec_free_context(&r->dec);
    close_input(r);
    nst_free(r);
}
