/* tests/test_video_io.c: the clip reader and writer (io/video/video.h). Video files: a synthetic clip
 * written with each codec and container and read back (exact frame count and rational rate, the
 * error each codec may make: FFV1 exact at 16 bits), the same frames giving the same bytes, the
 * colour matrix and range both ways against BT.601/BT.709's equations (files made by hand and by
 * the ffmpeg program, not by our writer), audio copied for the span rendered (measured by
 * ffprobe), a variable rate and damaged files refused with one line naming the file, reading
 * forward past frames. Image sequences: a 16-bit round trip, numbering from 1, a missing frame
 * and a frame of another size refused. The targets: codec against container, an existing output,
 * an aborted write leaving nothing. The cases that need the ffmpeg program SKIP without it; the
 * video cases SKIP in a build without FFmpeg, which must refuse video files with its message. */
#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../io/video/video.h"
#include "test.h"

#define W 64
#define H 48
#define N 12

static const nst_clip_limits LIM = {16e6, 16384, 10000, "content.path"};

/* Frame t of the synthetic clip: gradients that move, values between 8-bit steps. */
static void synth(nst_image *img, int w, int h, int t)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float *p = img->px + 3 * ((size_t)y * w + x);
            double u = (x + 1.5 * t) / (w + 20.0), v = (double)y / h;
            p[0] = (float)(0.15 + 0.7 * u), p[1] = (float)(0.2 + 0.6 * v), p[2] = (float)(0.5 + 0.3 * sin(3 * u + 2 * v));
        }
}

/* img as the writers store it at 16 bits (io/image/image.h's rounding), read back */
static void quantise16(nst_image *img)
{
    uint16_t row[3 * W];
    for (int y = 0; y < img->h; y++) {
        nst_image_get_row(img, y, 16, row);
        nst_image_put_row(img, y, 0, img->w, row, 3, 16);
    }
}

static void flat(nst_image *img, float r, float g, float b)
{
    for (size_t i = 0; i < (size_t)img->w * img->h; i++) img->px[3 * i] = r, img->px[3 * i + 1] = g, img->px[3 * i + 2] = b;
}

static nst_clip_out_spec spec_for(const char *path, nst_vcodec codec, int fps_num, int fps_den)
{
    return (nst_clip_out_spec){.path = path, .w = W, .h = H, .fps_num = fps_num, .fps_den = fps_den, .codec = codec, .crf = 4, .bits = 16,
                               .threads = 2, .overwrite = 1, .comment = "test_video_io"};
}

/* Frames first .. first + n - 1 of the synthetic clip into a new file. */
static nst_status write_synth(const nst_clip_out_spec *s, int first, int n)
{
    nst_clip_writer *w;
    nst_image img;
    NST_TRY(nst_clip_writer_open(s, &w));
    nst_status st = nst_image_alloc(&img, s->w, s->h);
    for (int t = first; st == NST_OK && t < first + n; t++) {
        synth(&img, s->w, s->h, t);
        st = nst_clip_writer_put(w, &img);
    }
    nst_image_free(&img);
    if (st != NST_OK) {
        nst_clip_writer_abort(w);
        return st;
    }
    return nst_clip_writer_finish(w);
}

/* Mean and largest |a - b| over two images of one size. */
static void errors(const nst_image *a, const nst_image *b, double *mean, double *max)
{
    size_t n = (size_t)a->w * a->h * 3;
    double sum = 0;
    *max = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a->px[i] - b->px[i]);
        sum += d, *max = d > *max ? d : *max;
    }
    *mean = sum / n;
}

static int have_ffmpeg_cli(void) { return system("ffmpeg -version >/dev/null 2>&1 && ffprobe -version >/dev/null 2>&1") == 0; }

/* Make `out` with the ffmpeg program: "ffmpeg -v error -y ARGS 'out'", ARGS a printf format; a
 * failure is a failed check. */
static void ffmpeg_make(const char *out, const char *args, ...) __attribute__((format(printf, 2, 3)));
static void ffmpeg_make(const char *out, const char *args, ...)
{
    char a[1024], cmd[2200];
    va_list ap;
    va_start(ap, args);
    vsnprintf(a, sizeof a, args, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -y %s '%s'", a, out);
    CHECK(system(cmd) == 0, "ffmpeg could not make %s: %s", out, cmd);
}

/* A path in the scratch folder, kept in buf (test_scratch reuses its own). */
static const char *scratch(char buf[1024], const char *name)
{
    snprintf(buf, 1024, "%s", test_scratch(name));
    return buf;
}

/* The status of opening path, the message checked for fragments (and one line, naming path). */
static void refused_open(const char *what, const char *path, const char *frag1, const char *frag2)
{
    nst_clip_reader *r = NULL;
    nst_clip_info info;
    nst_fail_clear();
    nst_status s = nst_clip_open(path, 25, 1, &LIM, &r, &info);
    const char *m = nst_fail_message();
    CHECK(s == NST_EINPUT && !r, "%s: status %d", what, (int)s);
    CHECK(strstr(m, path) && !strchr(m, '\n'), "%s: message '%s' does not name %s on one line", what, m, path);
    CHECK(!frag1 || strstr(m, frag1), "%s: message '%s' lacks '%s'", what, m, frag1);
    CHECK(!frag2 || strstr(m, frag2), "%s: message '%s' lacks '%s'", what, m, frag2);
    nst_clip_close(r);
    nst_fail_clear();
}

/* ---- video files ------------------------------------------------------------------------------------ */

/* (built with FFmpeg, video files that do not load, through the video plugin, are a failure) */
#ifdef NST_HAVE_FFMPEG
#define NEED_FFMPEG()                                                                             \
    do {                                                                                          \
        if (!nst_video_available()) {                                                             \
            CHECK(0, "built with FFmpeg, and its video plugin does not load (util/plugin.h)");    \
            return;                                                                               \
        }                                                                                         \
    } while (0)
#else
#define NEED_FFMPEG() SKIP("this nstbatch was built without FFmpeg's libraries")
#endif

/* 1: every codec in a container it may go in, read back: count, exact rate, size, bits, error. */
static void t_codecs_round_trip(void)
{
    NEED_FFMPEG();
    static const struct {
        nst_vcodec codec;
        const char *file;
        int bits;
        double mean_bound;
    } cases[] = {{NST_VCODEC_H264, "h264.mp4", 8, 0.01}, {NST_VCODEC_H264_10, "h264_10.mkv", 10, 0.006},
                 {NST_VCODEC_PRORES, "prores.mov", 10, 0.006}, {NST_VCODEC_FFV1, "ffv1.mkv", 16, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char path[1024];
        scratch(path, cases[c].file);
        nst_clip_out_spec s = spec_for(path, cases[c].codec, 30000, 1001);
        CHECK(write_synth(&s, 0, N) == NST_OK, "%s: %s", cases[c].file, nst_fail_message());
        nst_clip_reader *r = NULL;
        nst_clip_info info;
        CHECK(nst_clip_open(path, 0, 0, &LIM, &r, &info) == NST_OK, "%s: %s", cases[c].file, nst_fail_message());
        if (!r) continue;
        CHECK(info.frames == N && info.fps_num == 30000 && info.fps_den == 1001 && info.w == W && info.h == H && info.is_video,
              "%s: %lld frames at %d/%d fps, %dx%d", cases[c].file, info.frames, info.fps_num, info.fps_den, info.w, info.h);
        CHECK(info.bits == cases[c].bits, "%s: %d bits, not %d (%s)", cases[c].file, info.bits, cases[c].bits, info.detail);
        double worst_mean = 0, worst = 0;
        nst_image want, got;
        nst_image_alloc(&want, W, H);
        for (int t = 0; t < N; t++) {
            double mean, max;
            CHECK(nst_clip_read(r, t, &got) == NST_OK, "%s frame %d: %s", cases[c].file, t, nst_fail_message());
            if (!got.px) break;
            synth(&want, W, H, t);
            if (cases[c].codec == NST_VCODEC_FFV1) quantise16(&want); /* lossless: what was given, at 16 bits */
            errors(&got, &want, &mean, &max);
            worst_mean = mean > worst_mean ? mean : worst_mean, worst = max > worst ? max : worst;
            nst_image_free(&got);
        }
        nst_image_free(&want);
        printf("    %-12s %s: mean error %.5f, max %.5f\n", cases[c].file, info.detail, worst_mean, worst);
        if (cases[c].codec == NST_VCODEC_FFV1) CHECK(worst == 0, "%s: max error %g: not exact at 16 bits", cases[c].file, worst);
        else CHECK(worst_mean <= cases[c].mean_bound, "%s: mean error %g above %g", cases[c].file, worst_mean, cases[c].mean_bound);
        nst_clip_close(r);
    }
}

static int same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb, ca, cb;
    if (same) {
        do ca = fgetc(fa), cb = fgetc(fb);
        while (ca == cb && ca != EOF);
        same = ca == cb;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* 2: the same frames, the same bytes (x264 on 2 threads; FFV1 in Matroska, whose IDs are random
 * unless the muxer runs bit-exact). */
static void t_deterministic(void)
{
    NEED_FFMPEG();
    const char *names[][2] = {{"det_a.mp4", "det_b.mp4"}, {"det_a.mkv", "det_b.mkv"}};
    nst_vcodec codecs[] = {NST_VCODEC_H264, NST_VCODEC_FFV1};
    for (int k = 0; k < 2; k++) {
        char a[1024], b[1024];
        scratch(a, names[k][0]);
        scratch(b, names[k][1]);
        nst_clip_out_spec sa = spec_for(a, codecs[k], 25, 1), sb = spec_for(b, codecs[k], 25, 1);
        CHECK(write_synth(&sa, 0, N) == NST_OK && write_synth(&sb, 0, N) == NST_OK, "%s", nst_fail_message());
        CHECK(same_bytes(a, b), "%s and %s differ", names[k][0], names[k][1]);
    }
}

/* The duration ffprobe gives a file's first stream of a type ("audio", "video"); -1 without one. */
static double probe_duration(const char *path, const char *type)
{
    char cmd[1400], line[256];
    snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams %c:0 -show_entries stream=duration -of csv=p=0 '%s'", type[0], path);
    FILE *p = popen(cmd, "r");
    double d = -1;
    if (p && fgets(line, sizeof line, p)) d = atof(line);
    if (p) pclose(p);
    return d;
}

/* The largest |sample| of path's audio in its first `seconds`, decoded by the ffmpeg program. */
static double audio_peak(const char *path, double seconds)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "ffmpeg -v error -i '%s' -t %g -vn -ac 1 -f f32le -", path, seconds);
    FILE *p = popen(cmd, "r");
    float v;
    double peak = -1;
    while (p && fread(&v, sizeof v, 1, p) == 1) peak = fabs(v) > peak ? fabs(v) : peak;
    if (p) pclose(p);
    return peak;
}

/* Frames first .. first + n - 1 of src rendered (here: copied) to out with src's audio for them. */
static void render_span(nst_clip_reader *r, const char *src, const char *out, int first, int n)
{
    nst_clip_out_spec s = spec_for(out, NST_VCODEC_H264, 25, 1);
    s.audio_from = src, s.audio_start = first / 25.0, s.audio_seconds = n / 25.0;
    nst_clip_writer *w = NULL;
    CHECK(nst_clip_writer_open(&s, &w) == NST_OK, "%s", nst_fail_message());
    for (int t = first; w && t < first + n; t++) {
        nst_image img;
        CHECK(nst_clip_read(r, t, &img) == NST_OK, "frame %d: %s", t, nst_fail_message());
        CHECK(nst_clip_writer_put(w, &img) == NST_OK, "frame %d: %s", t, nst_fail_message());
        nst_image_free(&img);
    }
    CHECK(w && nst_clip_writer_finish(w) == NST_OK, "%s", nst_fail_message());
}

/* 3: frames 10..29 of a 2-second clip with sound rendered with its audio from 0.4 s for 0.8 s,
 * and frames 32..46 (from 1.28 s: the writer seeks). The sound's amplitude is 0.4 t, so the
 * output's opening peak tells where in the source its audio starts. */
static void t_audio_copied(void)
{
    NEED_FFMPEG();
    if (!have_ffmpeg_cli()) SKIP("no ffmpeg/ffprobe program to make a clip with sound (scripts/install-deps.sh --test)");
    char src[1024], out[1024];
    scratch(src, "with_sound.mp4");
    ffmpeg_make(src, "-f lavfi -i testsrc2=size=64x48:rate=25:duration=2 -f lavfi -i 'aevalsrc=0.4*t*sin(2*PI*440*t):s=48000:d=2' "
                     "-c:v libx264 -pix_fmt yuv420p -c:a aac -b:a 192k -shortest");
    const int spans[2][2] = {{10, 20}, {32, 15}};
    for (int k = 0; k < 2; k++) {
        nst_clip_reader *r = NULL;
        nst_clip_info info;
        CHECK(nst_clip_open(src, 0, 0, &LIM, &r, &info) == NST_OK, "%s", nst_fail_message());
        if (!r) return;
        CHECK(info.frames == 50 && info.fps_num == 25 && info.fps_den == 1 && info.has_audio, "source: %s", info.detail);
        scratch(out, k ? "sound_late.mp4" : "sound_out.mp4");
        render_span(r, src, out, spans[k][0], spans[k][1]);
        nst_clip_close(r);
        double start = spans[k][0] / 25.0, secs = spans[k][1] / 25.0;
        double da = probe_duration(out, "audio"), dv = probe_duration(out, "video"), peak = audio_peak(out, 0.1);
        printf("    from %.2f s: audio %.3f s, video %.3f s, opening peak %.3f (the source's %.3f to %.3f)\n", start, da, dv, peak, 0.4 * start,
               0.4 * (start + 0.1));
        CHECK(fabs(da - secs) <= 0.05, "audio stream of %.3f s, not %.2f +- 0.05", da, secs);
        CHECK(fabs(dv - secs) <= 0.001, "video stream of %.3f s, not %.2f", dv, secs);
        CHECK(peak >= 0.4 * start - 0.03 && peak <= 0.4 * (start + 0.1) + 0.03, "the audio does not start at %.2f s of the source", start);
        CHECK(nst_clip_open(out, 0, 0, &LIM, &r, &info) == NST_OK, "%s", nst_fail_message());
        CHECK(r && info.frames == spans[k][1] && info.fps_num == 25 && info.fps_den == 1 && info.has_audio, "output: %s", info.detail);
        nst_clip_close(r);
    }
    /* PCM cannot go into MP4: refused before anything is written, naming the way out */
    nst_clip_out_spec s = spec_for(out, NST_VCODEC_H264, 25, 1);
    scratch(src, "pcm_sound.mkv");
    ffmpeg_make(src, "-f lavfi -i testsrc2=size=64x48:rate=25:duration=1 -f lavfi -i sine=duration=1 -c:v ffv1 -c:a pcm_s16le");
    s.audio_from = src;
    nst_fail_clear();
    CHECK(nst_clip_check_target(&s) == NST_EINPUT && strstr(nst_fail_message(), "pcm_s16le") && strstr(nst_fail_message(), ".mkv or .mov"),
          "PCM into .mp4: '%s'", nst_fail_message());
    nst_fail_clear();
}

/* 4: a variable rate is refused with the way to convert it; a foreign NTSC-rate Matroska file
 * (millisecond timestamps) reads at exactly 30000/1001. */
static void t_rates(void)
{
    NEED_FFMPEG();
    if (!have_ffmpeg_cli()) SKIP("no ffmpeg program to make a variable-rate clip (scripts/install-deps.sh --test)");
    char vfr[1024], ntsc[1024];
    scratch(vfr, "vfr.mkv");
    scratch(ntsc, "ntsc.mkv");
    ffmpeg_make(vfr, "-f lavfi -i testsrc2=size=64x48:rate=25:duration=1 -vf setpts=N*N/TB/100 -fps_mode vfr -c:v ffv1");
    refused_open("variable rate", vfr, "frame rate", "-fps_mode cfr");
    ffmpeg_make(ntsc, "-f lavfi -i testsrc2=size=64x48:rate=30000/1001:duration=1 -c:v ffv1");
    nst_clip_reader *r = NULL;
    nst_clip_info info;
    CHECK(nst_clip_open(ntsc, 0, 0, &LIM, &r, &info) == NST_OK, "%s", nst_fail_message());
    CHECK(r && info.fps_num == 30000 && info.fps_den == 1001 && info.frames == 30, "%s", info.detail);
    nst_clip_close(r);
}

/* A copy of the first `keep` bytes of src (all when keep < 0) with `garbage` bytes of noise after. */
static void damaged_copy(const char *src, const char *dst, long keep, int garbage)
{
    FILE *in = src ? fopen(src, "rb") : NULL, *out = fopen(dst, "wb");
    for (long i = 0; in && out && (keep < 0 || i < keep); i++) {
        int c = fgetc(in);
        if (c == EOF) break;
        fputc(c, out);
    }
    unsigned x = 12345;
    for (int i = 0; out && i < garbage; i++) fputc((int)((x = x * 1103515245u + 12345u) >> 16) & 255, out);
    if (in) fclose(in);
    if (out) fclose(out);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* A Y4M file made byte by byte: `frames` frames of one colour, 4:4:4, 8-bit, the range tagged. */
static void write_y4m(const char *path, int frames, int y, int cb, int cr, int full)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fprintf(f, "YUV4MPEG2 W%d H%d F25:1 Ip A1:1 C444 XCOLORRANGE=%s\n", W, H, full ? "FULL" : "LIMITED");
    for (int k = 0; k < frames; k++) {
        fputs("FRAME\n", f);
        for (int p = 0; p < 3 * W * H; p++) fputc(p < W * H ? y : p < 2 * W * H ? cb : cr, f);
    }
    fclose(f);
}

/* 5: damaged files: one line naming the file, never a crash. */
static void t_damaged(void)
{
    NEED_FFMPEG();
    char good[1024], bad[1024];
    scratch(good, "good.mp4");
    nst_clip_out_spec s = spec_for(good, NST_VCODEC_H264, 25, 1);
    CHECK(write_synth(&s, 0, N) == NST_OK, "%s", nst_fail_message());
    scratch(bad, "half.mp4");
    damaged_copy(good, bad, file_size(good) / 2, 0);
    refused_open("an MP4 cut in half", bad, "cannot open it as a video", NULL);
    scratch(bad, "garbage.mp4");
    damaged_copy(NULL, bad, 0, 5000);
    refused_open("garbage", bad, "cannot open it as a video", NULL);
    scratch(bad, "missing.mp4");
    refused_open("a missing file", bad, "No such file", NULL);
    /* a Matroska file cut short holds whole frames, but fewer than its track's declared duration */
    char whole[1024];
    scratch(whole, "whole.mkv");
    s = spec_for(whole, NST_VCODEC_FFV1, 25, 1);
    CHECK(write_synth(&s, 0, N) == NST_OK, "%s", nst_fail_message());
    scratch(bad, "cut.mkv");
    damaged_copy(whole, bad, file_size(whole) * 6 / 10, 0);
    refused_open("a Matroska file cut short", bad, "truncated", NULL);
    /* an MP4 whose index comes first (moved there by ffmpeg), cut: fewer frames than the index */
    if (have_ffmpeg_cli()) {
        char fast[1024];
        scratch(fast, "faststart.mp4");
        ffmpeg_make(fast, "-i '%s' -c copy -movflags +faststart", good);
        scratch(bad, "faststart_cut.mp4");
        damaged_copy(fast, bad, file_size(fast) * 7 / 10, 0);
        refused_open("an MP4 with its index first, cut", bad, NULL, NULL);
    }
    /* zero frames: a Y4M header and no frame; a writer finished without frames (the MP4 muxer
     * then leaves the empty track out) */
    scratch(bad, "empty.y4m");
    write_y4m(bad, 0, 0, 0, 0, 0);
    refused_open("zero frames", bad, "no frames", NULL);
    scratch(bad, "empty.mp4");
    nst_clip_writer *w = NULL;
    s = spec_for(bad, NST_VCODEC_H264, 25, 1);
    CHECK(nst_clip_writer_open(&s, &w) == NST_OK && nst_clip_writer_finish(w) == NST_OK, "%s", nst_fail_message());
    refused_open("an empty MP4", bad, "no video stream", NULL);
    /* no video stream at all */
    if (have_ffmpeg_cli()) {
        scratch(bad, "only_sound.mkv");
        ffmpeg_make(bad, "-f lavfi -i sine=duration=1 -c:a pcm_s16le");
        refused_open("sound only", bad, "no video stream", NULL);
    }
    /* 3.7 kB of Matroska asking FFmpeg for 1.3 GB (fuzz_video's find, kept as its seed) */
    const char *big = "tests/fuzz/corpus_video/oom_matroska_size.mkv";
    if (access(big, R_OK) == 0) refused_open("a lying Matroska size", big, "beyond what FFmpeg may allocate", NULL);
    else printf("    (%s not found: run from the repository's root)\n", big);
    /* an image is not a video: only video containers are opened */
    scratch(bad, "picture.png");
    nst_image img;
    nst_image_alloc(&img, W, H);
    synth(&img, W, H, 0);
    CHECK(nst_image_write(bad, &img, 8, 1, NULL) == NST_OK, "%s", nst_fail_message());
    nst_image_free(&img);
    refused_open("a PNG", bad, "cannot open it as a video", NULL);
    /* limits: frames larger than allowed, more frames than allowed */
    nst_clip_reader *r = NULL;
    nst_clip_info info;
    nst_clip_limits small = LIM;
    small.max_pixels = W * H - 1;
    nst_fail_clear();
    CHECK(nst_clip_open(good, 0, 0, &small, &r, &info) == NST_EINPUT && strstr(nst_fail_message(), "above the limit"), "size limit: '%s'",
          nst_fail_message());
    small = LIM, small.max_frames = N - 1;
    nst_fail_clear();
    CHECK(nst_clip_open(good, 0, 0, &small, &r, &info) == NST_EINPUT && strstr(nst_fail_message(), "more than 11 frames"), "count limit: '%s'",
          nst_fail_message());
    nst_fail_clear();
}

/* Y'CbCr (8-bit codes) to R'G'B' by a matrix (kr, kb) and range: the standards' equations. */
static void ycbcr_to_rgb(double y, double cb, double cr, double kr, double kb, int full, double rgb[3])
{
    double yn = full ? y / 255 : (y - 16) / 219, pb = full ? (cb - 128) / 255 : (cb - 128) / 224, pr = full ? (cr - 128) / 255 : (cr - 128) / 224;
    rgb[0] = yn + 2 * (1 - kr) * pr;
    rgb[2] = yn + 2 * (1 - kb) * pb;
    rgb[1] = (yn - kr * rgb[0] - kb * rgb[2]) / (1 - kr - kb);
}

/* The colour of pixel (10, 10) of path's frame 1, against the equations' within tol. */
static void check_colour(const char *what, const char *path, const double want[3], double tol)
{
    nst_clip_reader *r = NULL;
    nst_clip_info info;
    nst_image img = {0};
    CHECK(nst_clip_open(path, 0, 0, &LIM, &r, &info) == NST_OK && nst_clip_read(r, 1, &img) == NST_OK, "%s: %s", what, nst_fail_message());
    for (int c = 0; img.px && c < 3; c++) {
        double got = img.px[3 * (10 * W + 10) + c];
        CHECK(fabs(got - want[c]) <= tol, "%s: channel %d is %.4f, the equations give %.4f", what, c, got, want[c]);
    }
    nst_image_free(&img);
    nst_clip_close(r);
}

/* 9: the reader converts by the tags (untagged SD: BT.601) and the writer writes BT.709 limited
 * range, each checked against the equations, not against each other. */
static void t_colour_matrices(void)
{
    NEED_FFMPEG();
    const double y = 150, cb = 100, cr = 190;
    double want[3];
    char path[1024], tagged[1024];
    scratch(path, "limited.y4m");
    write_y4m(path, 3, (int)y, (int)cb, (int)cr, 0);
    ycbcr_to_rgb(y, cb, cr, 0.299, 0.114, 0, want);
    check_colour("untagged SD, limited range: BT.601", path, want, 0.004);
    scratch(path, "full.y4m");
    write_y4m(path, 3, (int)y, (int)cb, (int)cr, 1);
    ycbcr_to_rgb(y, cb, cr, 0.299, 0.114, 1, want);
    check_colour("untagged SD, full range: BT.601", path, want, 0.004);
    if (!have_ffmpeg_cli()) SKIP("no ffmpeg program to tag a file BT.709 and to decode the writer's output (scripts/install-deps.sh --test)");
    /* the same samples tagged BT.709 (FFV1 keeps them exactly) */
    scratch(tagged, "bt709.mkv");
    ffmpeg_make(tagged, "-i '%s' -c:v ffv1 -colorspace bt709 -color_primaries bt709 -color_trc bt709 -color_range pc", path);
    ycbcr_to_rgb(y, cb, cr, 0.2126, 0.0722, 1, want);
    check_colour("tagged BT.709, full range", tagged, want, 0.004);
    /* the writer: a flat colour through ProRes, its samples as ffmpeg decodes them */
    const float rgb[3] = {0.8f, 0.3f, 0.1f};
    scratch(path, "flat.mov");
    nst_clip_out_spec s = spec_for(path, NST_VCODEC_PRORES, 25, 1);
    nst_clip_writer *w = NULL;
    nst_image img;
    nst_image_alloc(&img, W, H);
    flat(&img, rgb[0], rgb[1], rgb[2]);
    CHECK(nst_clip_writer_open(&s, &w) == NST_OK && nst_clip_writer_put(w, &img) == NST_OK && nst_clip_writer_finish(w) == NST_OK, "%s",
          nst_fail_message());
    nst_image_free(&img);
    unsigned short code[3] = {0, 0, 0};
    for (int p = 0; p < 3; p++) { /* the last pixel of each plane: Y, Cb, Cr */
        char c2[2400];
        snprintf(c2, sizeof c2, "ffmpeg -v error -i '%s' -f rawvideo -pix_fmt yuv444p16le - 2>/dev/null | head -c %d | tail -c 2", path, 2 * W * H * (p + 1));
        FILE *pp = popen(c2, "r");
        CHECK(pp && fread(&code[p], 2, 1, pp) == 1, "decoding %s with ffmpeg", path);
        if (pp) pclose(pp);
    }
    double kr = 0.2126, kb = 0.0722, yy = kr * rgb[0] + (1 - kr - kb) * rgb[1] + kb * rgb[2];
    double expect[3] = {16 + 219 * yy, 128 + 224 * (rgb[2] - yy) / (2 * (1 - kb)), 128 + 224 * (rgb[0] - yy) / (2 * (1 - kr))};
    for (int p = 0; p < 3; p++) {
        double got = code[p] / 256.0; /* 16-bit codes as 8-bit ones */
        CHECK(fabs(got - expect[p]) <= 1.0, "written plane %d: %.2f, BT.709 limited range gives %.2f", p, got, expect[p]);
    }
    printf("    written Y'CbCr %.2f %.2f %.2f (BT.709: %.2f %.2f %.2f)\n", code[0] / 256.0, code[1] / 256.0, code[2] / 256.0, expect[0], expect[1],
           expect[2]);
}

/* 8: reading forward past frames: frame 5 after frame 0 is frame 5; going back is refused. */
static void t_skip_forward(void)
{
    NEED_FFMPEG();
    char path[1024];
    scratch(path, "skip.mkv");
    nst_clip_out_spec s = spec_for(path, NST_VCODEC_FFV1, 25, 1);
    CHECK(write_synth(&s, 0, N) == NST_OK, "%s", nst_fail_message());
    nst_clip_reader *r = NULL;
    nst_clip_info info;
    nst_image got = {0}, want;
    CHECK(nst_clip_open(path, 0, 0, &LIM, &r, &info) == NST_OK, "%s", nst_fail_message());
    if (!r) return;
    CHECK(nst_clip_read(r, 0, &got) == NST_OK, "%s", nst_fail_message());
    nst_image_free(&got);
    CHECK(nst_clip_read(r, 5, &got) == NST_OK, "%s", nst_fail_message());
    nst_image_alloc(&want, W, H);
    synth(&want, W, H, 5);
    quantise16(&want);
    double mean, max;
    if (got.px) {
        errors(&got, &want, &mean, &max);
        CHECK(max == 0, "frame 5 read after frame 0 is off by %g", max);
    }
    nst_image_free(&got);
    nst_image_free(&want);
    nst_fail_clear();
    CHECK(nst_clip_read(r, 3, &got) == NST_ERUNTIME && strstr(nst_fail_message(), "read forward"), "going back: '%s'", nst_fail_message());
    CHECK(nst_clip_read(r, N, &got) == NST_EINPUT, "a frame past the end");
    nst_fail_clear();
    nst_clip_close(r);
}

/* ---- image sequences -------------------------------------------------------------------------------- */

static void t_patterns(void)
{
    const char *yes[] = {"frames/%05d.png", "%d.tif", "a%-3i.png", "100%%_%03u.png", "x%.4d.png"};
    const char *no[] = {"clip.mp4", "a%d_%d.png", "a%%d.png", "a%s.png", "a%ld.png", "a%5.png", "%"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) CHECK(nst_clip_is_pattern(yes[i]), "%s is a pattern", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) CHECK(!nst_clip_is_pattern(no[i]), "%s is not a pattern", no[i]);
    CHECK(nst_clip_is_video_name("a/b.MKV") && !nst_clip_is_video_name("a.mkv/b") && !nst_clip_is_video_name("x.png"), "video names");
    CHECK(nst_vcodec_parse("h264-10") == NST_VCODEC_H264_10 && nst_vcodec_parse("h265") == -1 && !strcmp(nst_vcodec_name(NST_VCODEC_FFV1), "ffv1"),
          "codec names");
}

/* 6: a 16-bit round trip, numbering from 1, a missing frame, a frame of another size. */
static void t_sequences(void)
{
    char dir[1024], pat[1100], path[1200];
    scratch(dir, "seq");
    mkdir(dir, 0755);
    snprintf(pat, sizeof pat, "%s/f_%%05d.png", dir);
    nst_clip_out_spec s = spec_for(pat, NST_VCODEC_H264, 25, 1);
    CHECK(write_synth(&s, 0, 6) == NST_OK, "%s", nst_fail_message());
    nst_clip_reader *r = NULL;
    nst_clip_info info;
    CHECK(nst_clip_open(pat, 24, 1, &LIM, &r, &info) == NST_OK, "%s", nst_fail_message());
    CHECK(r && info.frames == 6 && info.bits == 16 && !info.is_video && info.fps_num == 24 && info.w == W, "%s", info.detail);
    nst_image got, want;
    nst_image_alloc(&want, W, H);
    for (int t = 0; r && t < 6; t++) {
        double mean = 0, max = 1;
        CHECK(nst_clip_read(r, t, &got) == NST_OK, "%s", nst_fail_message());
        synth(&want, W, H, t);
        quantise16(&want);
        if (got.px) errors(&got, &want, &mean, &max);
        CHECK(got.px && max == 0, "frame %d off by %g", t, max);
        nst_image_free(&got);
    }
    nst_clip_close(r);
    /* numbered from 1 */
    snprintf(pat, sizeof pat, "%s/one_%%d.tif", dir);
    s = spec_for(pat, NST_VCODEC_H264, 25, 1);
    s.first = 1, s.bits = 8;
    CHECK(write_synth(&s, 0, 3) == NST_OK, "%s", nst_fail_message());
    CHECK(nst_clip_open(pat, 25, 1, &LIM, &r, &info) == NST_OK && info.frames == 3 && info.bits == 8, "from 1: %s", nst_fail_message());
    if (r && nst_clip_read(r, 0, &got) == NST_OK) {
        double mean, max;
        synth(&want, W, H, 0);
        errors(&got, &want, &mean, &max);
        CHECK(max <= 0.5 / 255 + 1e-6, "from 1: frame 0 (one_1.tif) off by %g", max);
        nst_image_free(&got);
    }
    nst_clip_close(r);
    /* a gap: frame 2 removed, frames after it kept */
    snprintf(pat, sizeof pat, "%s/f_%%05d.png", dir);
    snprintf(path, sizeof path, "%s/f_00002.png", dir);
    CHECK(rename(path, test_scratch("aside.png")) == 0, "moving %s", path);
    refused_open("a missing frame", pat, "frame 00002 is missing", "frames 0-1 and 3-5 exist");
    CHECK(rename(test_scratch("aside.png"), path) == 0, "restoring %s", path);
    /* a frame of another size */
    snprintf(path, sizeof path, "%s/f_00004.png", dir);
    nst_image small;
    nst_image_alloc(&small, W / 2, H / 2);
    synth(&small, W / 2, H / 2, 4);
    CHECK(nst_image_write(path, &small, 16, 1, NULL) == NST_OK, "%s", nst_fail_message());
    nst_image_free(&small);
    CHECK(nst_clip_open(pat, 25, 1, &LIM, &r, &info) == NST_OK, "%s", nst_fail_message());
    nst_fail_clear();
    nst_status st = r ? nst_clip_read(r, 4, &got) : NST_EINPUT;
    const char *m = nst_fail_message();
    CHECK(st == NST_EINPUT && strstr(m, "f_00004.png is 32x24") && strstr(m, "f_00000.png is 64x48"), "another size: '%s'", m);
    nst_clip_close(r);
    nst_image_free(&want);
    snprintf(pat, sizeof pat, "%s/none_%%03d.png", dir);
    refused_open("no frames", pat, "no frames", NULL);
    nst_fail_clear();
}

/* ---- targets ---------------------------------------------------------------------------------------- */

/* Any ".nstbatch-" temporary left in the scratch folder. */
static int temporaries_left(void)
{
    DIR *d = opendir(test_dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".nstbatch-") != NULL;
    if (d) closedir(d);
    return n;
}

static void refused_target(const char *what, const nst_clip_out_spec *s, const char *frag1, const char *frag2)
{
    nst_fail_clear();
    nst_status st = nst_clip_check_target(s);
    const char *m = nst_fail_message();
    CHECK(st == NST_EINPUT && strstr(m, frag1) && (!frag2 || strstr(m, frag2)) && !strchr(m, '\n'), "%s: status %d, '%s'", what, (int)st, m);
    nst_fail_clear();
}

/* 7: codec against container, the encoder's constraints, existing outputs, an aborted write. */
static void t_targets(void)
{
    NEED_FFMPEG();
    char path[1024];
    scratch(path, "target.mp4");
    nst_clip_out_spec s = spec_for(path, NST_VCODEC_FFV1, 25, 1);
    refused_target("FFV1 in MP4", &s, "video.codec = ffv1", ".mkv .mov");
    s.codec = NST_VCODEC_PRORES;
    refused_target("ProRes in MP4", &s, "video.codec = prores", ".mov .mkv");
    s.codec = NST_VCODEC_H264, s.crf = 52;
    refused_target("crf 52", &s, "0..51", NULL);
    s.crf = 18, s.w = 63;
    refused_target("an odd width for 4:2:0", &s, "even width", NULL);
    s.w = W, s.path = test_scratch("target.avi");
    refused_target("an AVI output", &s, ".mp4, .mov or .mkv", NULL);
    s.path = path;
    CHECK(nst_clip_check_target(&s) == NST_OK, "a new .mp4: %s", nst_fail_message());
    s.codec = NST_VCODEC_H264_10;
    CHECK(nst_clip_check_target(&s) == NST_OK, "10-bit H.264 (Debian's libx264 has it): %s", nst_fail_message());
    /* an existing output: refused without overwrite, and an aborted write leaves it as it was */
    CHECK(write_synth(&s, 0, 2) == NST_OK, "%s", nst_fail_message());
    long before = file_size(path);
    s.overwrite = 0;
    refused_target("an existing output", &s, "output exists", "overwrite");
    s.overwrite = 1;
    nst_clip_writer *w = NULL;
    nst_image img;
    nst_image_alloc(&img, W, H);
    synth(&img, W, H, 0);
    CHECK(nst_clip_writer_open(&s, &w) == NST_OK && nst_clip_writer_put(w, &img) == NST_OK && nst_clip_writer_put(w, &img) == NST_OK, "%s",
          nst_fail_message());
    CHECK(temporaries_left() == 1, "%d temporaries while writing", temporaries_left());
    nst_clip_writer_abort(w);
    CHECK(temporaries_left() == 0 && file_size(path) == before, "after abort: %d temporaries, %ld bytes (%ld before)", temporaries_left(),
          file_size(path), before);
    /* a new name: nothing under it after an abort */
    s.path = test_scratch("aborted.mkv"), s.codec = NST_VCODEC_FFV1;
    CHECK(nst_clip_writer_open(&s, &w) == NST_OK && nst_clip_writer_put(w, &img) == NST_OK, "%s", nst_fail_message());
    nst_clip_writer_abort(w);
    CHECK(file_size(test_scratch("aborted.mkv")) < 0 && temporaries_left() == 0, "an aborted new file left something");
    nst_image_free(&img);
}

/* Without FFmpeg: video files refused with the way to get it. */
static void t_without_ffmpeg(void)
{
    if (nst_video_available()) SKIP("built with FFmpeg (the other cases cover it)");
    nst_clip_out_spec s = spec_for(test_scratch("x.mp4"), NST_VCODEC_H264, 25, 1);
    refused_target("a video output", &s, "built without FFmpeg", "libavformat-dev");
    refused_open("a video input", test_scratch("x.mp4"), "built without FFmpeg", "scripts/install-deps.sh");
}

int main(int argc, char **argv)
{
    if (!test_scratch_init(argc, argv, "test-video-io")) return 1;
    RUN(t_patterns);
    RUN(t_sequences);
    RUN(t_codecs_round_trip);
    RUN(t_deterministic);
    RUN(t_skip_forward);
    RUN(t_colour_matrices);
    RUN(t_audio_copied);
    RUN(t_rates);
    RUN(t_damaged);
    RUN(t_targets);
    RUN(t_without_ffmpeg);
    test_scratch_done();
    return test_report("test_video_io");
}
