/* video/store.h: a clip render's work directory (video.work): the finished frames and the state a
 * killed render resumes from.
 *
 *   clip.key            what render this is (the resolved config's hash, the range, the size): a
 *                       directory of another render's frames is refused, never mixed in
 *   frame_NNNNNNNN.png  frame NNNNNNNN of the range (0-based), 16-bit: the output is encoded from
 *                       these once every frame is done
 *   state_NNNNNNNN.f32  its result in float, as the next frames need it (the warped start and the
 *                       temporal term); kept only while later frames of its unit may need it
 * and with video.passes > 1, until the unit's last pass is done:
 *   state_pP_NNNNNNNN.f32  its result after pass P (P >= 2; pass 1's is state_NNNNNNNN.f32)
 *   content_NNNNNNNN.png   the frame as rendered (16-bit), for the later passes' content term
 *   fwd_NNNNNNNN.flo, bwd_NNNNNNNN.flo  the flow from frame NNNNNNNN - 1 to it and back
 *
 * Every file is written under a temporary name and renamed (io/atomic_file.h); a frame's state is
 * written before its image, so a frame whose image exists has its state too (until dropped). A
 * frame is done when its image exists: a resumed render starts each unit at its first frame not
 * done, from the states of the frames before it, and gives the same bits as a run never stopped.
 */
#ifndef NST_VIDEO_STORE_H
#define NST_VIDEO_STORE_H

#include "../io/video/flo.h"
#include "../io/image/image.h"

typedef struct {
    char dir[4096];
} nst_clip_store;

/* Open (create) dir for the render described by key (one line of text). A directory holding
 * another key is refused (NST_EINPUT naming video.work); restart: it is emptied first. */
nst_status nst_clip_store_open(nst_clip_store *s, const char *dir, const char *key, int restart);
/* 1 when frame r's image is there. */
int nst_clip_store_done(const nst_clip_store *s, long long r);
nst_status nst_clip_store_put(const nst_clip_store *s, long long r, const nst_image *result);
/* Frame r's image (the finished frame, 16-bit) or its state (the float result). */
nst_status nst_clip_store_frame(const nst_clip_store *s, long long r, nst_image *out);
nst_status nst_clip_store_state(const nst_clip_store *s, long long r, int w, int h, nst_image *out);
void nst_clip_store_drop_state(const nst_clip_store *s, long long r);
/* With video.passes > 1: a result of pass `pass` (1: the plain state) in float, the content frame
 * and the flows between frame r - 1 and r, written and read back (either of content and the
 * flows may be NULL: not read) (nst_clip_store_drop_pass removes
 * frame r's files of the passes once the unit is done). */
nst_status nst_clip_store_put_pass(const nst_clip_store *s, int pass, long long r, const nst_image *result);
nst_status nst_clip_store_pass(const nst_clip_store *s, int pass, long long r, int w, int h, nst_image *out);
int nst_clip_store_has_pass(const nst_clip_store *s, int pass, long long r);
nst_status nst_clip_store_put_inputs(const nst_clip_store *s, long long r, const nst_image *content, const nst_flow *fwd, const nst_flow *bwd);
nst_status nst_clip_store_inputs(const nst_clip_store *s, long long r, int w, int h, nst_image *content, nst_flow *fwd, nst_flow *bwd);
/* The finished frame's image (16-bit) alone, its state kept as it is. */
nst_status nst_clip_store_put_frame(const nst_clip_store *s, long long r, const nst_image *result);
void nst_clip_store_drop_pass(const nst_clip_store *s, int passes, long long r);
/* Remove the directory and everything in it (after the output is complete). */
nst_status nst_clip_store_remove(const nst_clip_store *s);

#endif
