/* io/video/video_av.h: what the FFmpeg reader (video_read.c, which defines these) and writer
 * (video_write.c) share: FFmpeg kept quiet, its errors as one line, and video files opened
 * the one guarded way. Only in builds with FFmpeg. */
#ifndef NST_VIDEO_AV_H
#define NST_VIDEO_AV_H

#include <libavformat/avformat.h>

#include "../../util/status.h"

/* FFmpeg's own logging off: a damaged file must give nstbatch's one line, not FFmpeg's many. */
void nst_av_quiet(void);

/* Record "NAME: WHAT (CALL: FFmpeg's text for err)" as kind; AVERROR(ENOMEM) is NST_ENOMEM, except
 * for input (NST_EINPUT), where the reader's cap on FFmpeg's allocations refuses a lying size. */
nst_status nst_av_fail(nst_status kind, const char *name, const char *what, const char *call, int err);

/* Open url (a path, or "" where the caller put a custom AVIOContext in *fmt) and find its streams.
 * Only the demuxers of the containers video.h names are allowed, and no protocol but files:
 * a file cannot make FFmpeg open playlists, other files or the network. On failure *fmt is freed
 * (not a custom AVIOContext) and the error names `name`. */
nst_status nst_av_open(AVFormatContext **fmt, const char *url, const char *name);

#endif
