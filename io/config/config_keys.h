/* io/config/config_keys.h: THE schema. Every configuration key is declared here once, and this
 * one list generates the config struct fields, the validation, --help and --print-config.
 *
 *   NST_KEY(section, name, TYPE, "default", lo, hi, "allowed", "help")
 *
 * TYPE: INT and FLOAT check [lo, hi]; ENUM checks "a|b|c"; INTWORD is an integer in [lo, hi] or a
 * word of "a|b" (tiling.tile_size = auto); BOOL takes true/false, yes/no, on/off, 1/0; STR and
 * LIST are text (LIST: comma-separated, checked by its consumer); PATH is text that, when
 * relative and read from a file, is resolved against that file's directory. Defaults are
 * written as text and go through the same validator (a test checks that every default is valid).
 */
#define NST_BIG 4611686018427387904.0 /* 2^62 */

/* [content] */
NST_KEY(content, path, PATH, "", 0, 0, "", "content image: PNG, JPEG or TIFF (8/16-bit; gray, RGB or RGBA); or a clip, which renders a video (see [video]): a video file (.mp4, .mov, .mkv, ...) or an image sequence named by a printf pattern (frames/%05d.png)")
NST_KEY(content, weight, FLOAT, "1", 0, 1e12, "", "content loss weight; the content loss is ||F-P||^2 / ||P||^2 summed over the content layers")
NST_KEY(content, layers, LIST, "relu4_2", 0, 0, "", "content layers, comma-separated VGG-19 names relu1_1..relu5_4")
NST_KEY(content, mask, PATH, "", 0, 0, "", "grayscale image over the content weighting the content loss per pixel (white: content.weight, black: none); empty: everywhere")

/* [style] */
NST_KEY(style, path, PATHLIST, "", 0, 0, "", "style images, comma-separated: PNG, JPEG or TIFF (a large TIFF is read by region)")
NST_KEY(style, blend_weights, LIST, "", 0, 0, "", "one weight per style image, comma-separated (normalised to sum 1); empty: equal")
NST_KEY(style, masks, PATHLIST, "", 0, 0, "", "one grayscale mask per style image, comma-separated, over the content: each style applies where its mask is white (guided Gram); empty: the styles blend everywhere")
NST_KEY(style, weight, FLOAT, "1000", 0, 1e12, "", "style loss weight; each style layer's loss is ||G-A||^2 / ||A||^2 with G the Gram matrix of the whole image")
NST_KEY(style, layers, LIST, "relu1_1,relu2_1,relu3_1,relu4_1,relu5_1", 0, 0, "", "style layers, comma-separated VGG-19 names relu1_1..relu5_4")
NST_KEY(style, layer_weights, LIST, "", 0, 0, "", "one weight per style layer, comma-separated; empty: 1 for every layer")
NST_KEY(style, scale, FLOAT, "1", 0.01, 100, "", "style image long side, relative to the output's long side")

/* [tv] */
NST_KEY(tv, weight, FLOAT, "10", 0, 1e12, "", "total-variation weight: mean squared difference of neighbouring pixels (image in [0,1])")

/* [output] */
NST_KEY(output, path, PATH, "", 0, 0, "", "output image; without output.format its extension picks the format (.tif/.tiff, .h5/.hdf5, .png, .jpg/.jpeg, .dzi); with it, each format's extension replaces it; a clip (content.path a video or a pattern) renders to a video (.mp4, .mov, .mkv) or to frames named by a pattern (out/%05d.png)")
NST_KEY(output, format, LIST, "", 0, 0, "tiff|hdf5|png|jpeg|dzi", "output formats, comma-separated: tiff (tiled BigTIFF pyramid), hdf5 (parallel HDF5 image), png, jpeg (8-bit, at most 65535 px a side), dzi (Deep Zoom: NAME.dzi and NAME_files/, with a viewer page); empty: from output.path's extension")
NST_KEY(output, size, INT, "0", 0, 1000000, "", "long side of the output in pixels; 0 keeps the content's size")
NST_KEY(output, width, INT, "0", 0, 1000000, "", "output width in pixels (0: from height or size and the content's aspect)")
NST_KEY(output, height, INT, "0", 0, 1000000, "", "output height in pixels (0: from width or size and the content's aspect)")
NST_KEY(output, bits, ENUM, "8", 0, 0, "8|16", "bits per sample of the output image")
NST_KEY(output, overwrite, BOOL, "false", 0, 0, "", "replace existing output files (otherwise refuse before rendering)")
NST_KEY(output, compression, ENUM, "deflate", 0, 0, "deflate|lzw|jpeg|zstd|none", "TIFF tile compression: deflate and lzw and zstd with the horizontal predictor (lossless), jpeg (YCbCr, output.quality, chroma halved below quality 90; 8-bit only), none")
NST_KEY(output, level, INT, "0", 0, 22, "", "compression level: deflate 1-9 (TIFF, HDF5, PNG), zstd 1-22; 0: the codec's default (deflate 6, zstd 9)")
NST_KEY(output, quality, INT, "90", 1, 100, "", "JPEG quality: of the JPEG output, and of TIFF tiles with output.compression = jpeg (chroma halved below 90)")
NST_KEY(output, dpi, FLOAT, "0", 0, 100000, "", "print resolution in pixels per inch, stored in TIFF (XResolution, YResolution; reduced levels in proportion) and PNG (pHYs) outputs; 0: none stored")
NST_KEY(output, hdf5_compression, ENUM, "deflate", 0, 0, "deflate|none", "HDF5 chunk filters: deflate (with shuffle, at output.level) or none")
NST_KEY(output, dzi_tiles, ENUM, "jpeg", 0, 0, "jpeg|png", "Deep Zoom tile format: jpeg (output.quality) or png (lossless); 8-bit either way")
NST_KEY(output, dzi_content, BOOL, "true", 0, 0, "", "with a Deep Zoom output, also write the content at the output size as NAME_content.dzi (and NAME_content_files/), which the viewer shows beside the result")
NST_KEY(output, tile_size, INT, "512", 16, 8192, "", "output tile size in pixels, a multiple of 16: TIFF tiles, HDF5 chunks, Deep Zoom tiles, the unit each rank compresses")
NST_KEY(output, pyramid, BOOL, "true", 0, 0, "", "write reduced-resolution levels (halving down to one tile): TIFF SubIFDs, HDF5 /level1, /level2, ...")
NST_KEY(output, bigtiff, ENUM, "auto", 0, 0, "auto|yes|no", "BigTIFF: auto when the uncompressed pyramid could pass 4 GiB")
NST_KEY(output, preview, INT, "1024", 0, 65536, "", "long side of the preview written next to the outputs (NAME.preview.png; NAME.preview.jpg when the only output is a JPEG); 0: none")
NST_KEY(output, save_every, INT, "0", 0, NST_BIG, "", "while rendering, replace the preview (NAME.preview.png) with the image being rendered every N iterations; 0: the preview is written with the outputs only")

/* [video] (content.path a clip: docs/VIDEO.md) */
NST_KEY(video, first, INT, "0", 0, NST_BIG, "", "the first frame rendered, counted from 0 (a sequence's frames count from its lowest number)")
NST_KEY(video, frames, INT, "0", 0, NST_BIG, "", "frames rendered from video.first; 0: to the end of the clip")
NST_KEY(video, step, INT, "1", 1, 1000000, "", "render every N-th frame (the output's rate is the clip's divided by N)")
NST_KEY(video, fps, STR, "25", 0, 0, "", "frame rate of an image-sequence input, as N or N/D (30000/1001); a video file's own exact rate is always kept")
NST_KEY(video, temporal_weight, FLOAT, "3000", 0, 1e12, "", "weight of the temporal loss (Ruder et al.): each pixel held to the previous result warped along the optical flow, where the flow is consistent; 0: independent frames")
NST_KEY(video, iterations, INTWORD, "auto", 0, 100000000, "auto", "iterations of each frame after a shot's first, which starts from the previous result warped; auto: half of optim.iterations")
NST_KEY(video, long_term, LIST, "", 0, 0, "", "earlier frames also held by the temporal loss besides the previous one, as distances, comma-separated (2,4: frames i-2 and i-4; Ruder et al.'s long-term consistency); empty: the previous frame only")
NST_KEY(video, passes, INT, "1", 1, 16, "", "passes over each shot: 1 renders forward once; more go back and forth (backward, forward, ...), each frame starting from a blend of its last result and its neighbour's in the pass's direction, warped, and held to that neighbour (a multi-pass mode after Ruder et al.)")
NST_KEY(video, pass_iterations, INTWORD, "auto", 1, 100000000, "auto", "iterations of each frame in the passes after the first; auto: half of video.iterations")
NST_KEY(video, pass_blend, FLOAT, "0.5", 0, 1, "", "in the passes after the first, a frame starts from its last result moved this far towards its neighbour's warped result, where the flow is consistent")
NST_KEY(video, flow, ENUM, "dis", 0, 0, "dis|files", "optical flow: estimated with OpenCV's DIS, or read from Middlebury .flo files (video.flow_forward, video.flow_backward)")
NST_KEY(video, dis_preset, ENUM, "medium", 0, 0, "ultrafast|fast|medium", "DIS preset: speed against accuracy")
NST_KEY(video, flow_forward, PATH, "", 0, 0, "", "with video.flow = files: a printf pattern of .flo files, the one numbered i holding the flow from frame i to frame i+1")
NST_KEY(video, flow_backward, PATH, "", 0, 0, "", "with video.flow = files: a printf pattern of .flo files, the one numbered i holding the flow from frame i+1 back to frame i")
NST_KEY(video, cuts, LIST, "", 0, 0, "", "frames where a new shot starts, comma-separated frame numbers (besides any detected); every shot starts cold")
NST_KEY(video, detect_cuts, BOOL, "true", 0, 0, "", "detect scene cuts from the frames' colour histograms")
NST_KEY(video, cut_threshold, FLOAT, "0.5", 0.01, 1, "", "a cut where consecutive frames' colour histograms differ by more than this (half the L1 distance: 0 same, 1 disjoint)")
NST_KEY(video, chunk_frames, INT, "0", 0, NST_BIG, "", "split shots longer than this into chunks that start cold and render in parallel on rank groups (a seam in time at each); 0: never")
NST_KEY(video, group_ranks, INTWORD, "auto", 1, 1000000, "auto", "ranks per group; groups render shots (and chunks) side by side, and a group's ranks split each frame into tiles; auto: one group per shot, as far as the ranks go")
NST_KEY(video, codec, ENUM, "h264", 0, 0, "h264|h264-10|prores|ffv1", "video output codec: H.264 8-bit or 10-bit (.mp4, .mov, .mkv), ProRes 422 HQ (.mov, .mkv), FFV1 16-bit lossless (.mkv, .mov)")
NST_KEY(video, crf, INT, "18", 0, 51, "", "H.264 quality: 0 lossless, 18 visually lossless, 23 FFmpeg's default")
NST_KEY(video, audio, BOOL, "true", 0, 0, "", "copy the source's audio stream (the span of the frames rendered) into a video output")
NST_KEY(video, encode_threads, INT, "0", 0, 256, "", "encoder threads; 0: FFmpeg's choice")
NST_KEY(video, work, PATH, "", 0, 0, "", "directory of finished frames and the state a killed render resumes from; empty: OUTPUT.frames beside the output (removed when the output is complete)")

/* [model] */
NST_KEY(model, weights, PATH, "", 0, 0, "", "VGG-19 weights: the Keras file vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5 or the nstbatch layout; empty: the built-in seeded random VGG-19")
NST_KEY(model, random_seed, INT, "1", 0, NST_BIG, "", "seed of the built-in random VGG-19 (used when model.weights is empty)")
NST_KEY(model, random_width_divisor, INT, "1", 1, 64, "", "channel-width divisor of the built-in random VGG-19: 1, 2, 4, 8, 16, 32 or 64")
NST_KEY(model, pooling, ENUM, "max", 0, 0, "max|avg", "pooling layers of the network")

/* [optim] */
NST_KEY(optim, method, ENUM, "auto", 0, 0, "auto|adam|lbfgs", "optimiser of the image pixels: Adam, or L-BFGS (exact tiling only; projected into [0,1], history sharded by tile, dot products added exactly over tiles and ranks); auto: L-BFGS for a still image in exact mode (it reaches a given loss in about a third of Adam's time: bench/results/quality.md), Adam in cheap mode and for a clip's frames")
NST_KEY(optim, iterations, INT, "500", 0, 100000000, "", "optimiser iterations")
NST_KEY(optim, lr, FLOAT, "0.02", 1e-9, 10, "", "Adam learning rate, in image units (pixels in [0,1])")
NST_KEY(optim, beta1, FLOAT, "0.9", 0, 0.999999, "", "Adam first-moment decay")
NST_KEY(optim, beta2, FLOAT, "0.999", 0, 0.9999999, "", "Adam second-moment decay")
NST_KEY(optim, eps, FLOAT, "1e-8", 1e-30, 1, "", "Adam epsilon")
NST_KEY(optim, init, ENUM, "content", 0, 0, "content|noise|image", "initial image: the content, uniform noise (run.seed), or optim.init_path")
NST_KEY(optim, init_path, PATH, "", 0, 0, "", "initial image when optim.init = image (resized to the output size)")
NST_KEY(optim, clamp, BOOL, "true", 0, 0, "", "keep pixels in [0,1] after every step (projected Adam; projected L-BFGS, holding pixels on a bound their gradient pushes against); false: unconstrained steps, the result clamped at the end of each level before its loss is reported")
NST_KEY(optim, lbfgs_history, INT, "10", 1, 1000, "", "L-BFGS history length: pairs kept, each 24 bytes per owned pixel (counted by the planner)")
NST_KEY(optim, lbfgs_step, FLOAT, "1", 1e-6, 100, "", "L-BFGS step length (1: the quasi-Newton step; no line search)")
NST_KEY(optim, average, FLOAT, "0", 0, 0.9999, "", "decay of an exponential moving average of the pixels over each level's iterations (bias-corrected, as Adam's moments); the average is the level's result: its output, its reported loss and the next level's start; 0: the last iterate")
NST_KEY(optim, stop_tolerance, FLOAT, "0", 0, 1, "", "end a level early once its loss has stopped falling: when the mean of the last optim.stop_window losses is within this fraction of the mean of the window before them, after at least optim.stop_min iterations; 0: every level runs its iterations")
NST_KEY(optim, stop_window, INT, "25", 1, 100000, "", "iterations in each of the stopping rule's two windows")
NST_KEY(optim, stop_min, INT, "100", 0, 100000000, "", "iterations a level runs before the stopping rule may end it")

/* [tiling] */
NST_KEY(tiling, tile_size, INTWORD, "auto", 16, 1000000, "auto", "core size of a tile in pixels, a multiple of the network's total stride (16 to relu5_1); auto: the size that minimises the slowest rank's work within the memory budget")
NST_KEY(tiling, halo, INTWORD, "auto", 0, 100000, "auto|exact", "window overhang around each core in pixels (a multiple of the stride); exact: the width at which gradients on the core are exact (160 px to relu5_1); auto: exact in exact mode, 32 in cheap mode")
NST_KEY(tiling, mode, ENUM, "exact", 0, 0, "exact|cheap", "exact: tiles give the whole-image result; cheap: smaller halo, lagged Gram, halos refreshed every tiling.exchange_every iterations, overlaps blended")
NST_KEY(tiling, gram, ENUM, "auto", 0, 0, "auto|resident|two_pass|lagged", "how the global Gram meets the backward: keep every local tile's activations (resident), run the forward twice (two_pass), or use the previous iteration's Gram (lagged, not exact); auto: resident if it fits the memory budget, else two_pass (lagged in cheap mode)")
NST_KEY(tiling, exchange_every, INTWORD, "auto", 1, 1000000, "auto", "refresh halos every N iterations (N > 1 only in cheap mode); auto: 1 in exact mode, 4 in cheap mode")
NST_KEY(tiling, blend, ENUM, "cosine", 0, 0, "cosine|linear", "feather ramp for overlapping windows in cheap mode")
NST_KEY(tiling, blend_width, INTWORD, "auto", 1, 100000, "auto", "width of the cheap mode's feather ramp in pixels, from a window's inner edge (twice the halo spans the whole overlap); auto: the halo")

/* [pyramid] */
NST_KEY(pyramid, levels, INTWORD, "1", 1, 16, "auto", "coarse-to-fine levels, the finest the output; N: each factor times smaller than the next; 1: no pyramid; auto: coarse levels of fixed long sides, pyramid.min_size times factor^k, each at least sqrt(factor) below the output's long side, then the output")
NST_KEY(pyramid, factor, FLOAT, "2", 1.1, 8, "", "size ratio between successive levels")
NST_KEY(pyramid, min_size, INT, "256", 16, 1000000, "", "with pyramid.levels = auto: the coarsest level's long side")
NST_KEY(pyramid, iterations, LIST, "", 0, 0, "", "iterations per level, coarse to fine, comma-separated; empty: optim.iterations at the coarsest level, each finer level pyramid.decay times the one before, at least pyramid.min_iterations")
NST_KEY(pyramid, decay, FLOAT, "0.5", 0.01, 1, "", "without pyramid.iterations: each level's iterations over the coarser level's (1: optim.iterations on every level)")
NST_KEY(pyramid, min_iterations, INT, "100", 0, 100000000, "", "without pyramid.iterations: the fewest iterations of a level (optim.iterations if that is fewer)")
NST_KEY(pyramid, state, ENUM, "reset", 0, 0, "reset|carry", "Adam's moments at a level change: reset, or carried (upsampled like the pixels); L-BFGS always starts a new history")

/* [color] */
NST_KEY(color, mode, ENUM, "none", 0, 0, "none|luminance|match", "colour control: luminance-only transfer keeping the content's colours, or the style's colours matched to the content's (mean and covariance over the whole image)")

/* [batch] */
NST_KEY(batch, manifest, PATH, "", 0, 0, "", "a file of jobs, one per line: CONTENT STYLE OUTPUT [section.key=value ...] (relative paths from the manifest's directory; # comments)")
NST_KEY(batch, on_error, ENUM, "continue", 0, 0, "continue|stop", "a job that fails: report it and go on with the others, or stop the batch")
NST_KEY(batch, group_ranks, INTWORD, "auto", 1, 1000000, "auto", "ranks per group for small jobs, which groups render side by side; auto: 1")
NST_KEY(batch, pack_megapixels, FLOAT, "4", 0, 1000000, "", "jobs whose output is at most this many megapixels are packed into rank groups; larger jobs use every rank")
NST_KEY(batch, style_cache, PATH, "", 0, 0, "", "a directory where style targets are kept as HDF5 files and reused by later runs; empty: memory only")
NST_KEY(batch, summary, PATH, "", 0, 0, "", "write the batch's summary (every job: status, time, size, loss, output, message) as JSON to this file; empty: the table on stdout only")

/* [run] */
NST_KEY(run, seed, INT, "0", 0, NST_BIG, "", "seed of the noise initialisation")
NST_KEY(run, device, ENUM, "auto", 0, 0, "auto|cpu|cuda", "compute backend: auto uses CUDA where a GPU is present and the CPU otherwise")
NST_KEY(run, precision, ENUM, "auto", 0, 0, "auto|fp32|tf32|bf16|fp16", "activation storage and convolution math, fp32 accumulation throughout: bf16 (GPU and CPU) or fp16 (GPU) storage, fp32 storage with tf32 tensor-core math (GPU), or fp32; auto: bf16 on a GPU, and on a CPU where bf16 is the faster (AMX; AVX512_BF16 on AMD cores), fp32 on other CPUs; the first line of a run says which and why")
NST_KEY(run, threads, INT, "0", 0, 4096, "", "CPU threads per rank; 0: this rank's share of the node's cores (at most the cores it is bound to)")
NST_KEY(run, print_every, INT, "50", 0, 100000000, "", "print the loss terms every N iterations (0: first and last only)")
NST_KEY(run, memory_gb, FLOAT, "0", 0, 1000000, "", "memory budget per rank for tiles, activations and optimiser state, in GiB; 0: 80% of the memory available, shared by the ranks of a node")
NST_KEY(run, record, PATH, "", 0, 0, "", "write a JSON record of the run here: build, config, rank/host/GPU map, tiling, Gram strategy, per-phase times (min, max, mean over ranks)")
NST_KEY(run, stall_timeout, INTWORD, "auto", 1, 100000000, "auto", "seconds a multi-rank render may go without finishing an iteration (ranks stopped, lost or cut off by the network) before the job ends with one line naming them and exit status 75, so that it is requeued and resumes from its last checkpoint; a rank still computing, not waiting for the others, extends it; auto: 20 times the slowest iteration so far, at least 300, and 1800 until the first iteration has finished")
NST_KEY(run, progress, ENUM, "auto", 0, 0, "auto|live|lines", "progress on rank 0: a live status line redrawn in place besides the rows (live), the rows only (lines), or live when run directly on a terminal and lines under mpirun/srun, which cannot tell (auto); --quiet silences both")
NST_KEY(run, first_gradient, PATH, "", 0, 0, "", "diagnostic: write the first iteration's loss terms and image gradient (before any optimiser step; every rank's owned pixels, gathered on rank 0) to this file, to compare devices or tilings where the comparison is stable (docs/GPUS.md); the last level's and frame's is kept")

/* [checkpoint] */
NST_KEY(checkpoint, path, PATH, "", 0, 0, "", "directory for checkpoints (one file per rank and a manifest; a matching one is resumed at start); empty: none, and SIGUSR1/SIGTERM stop the run without saving")
NST_KEY(checkpoint, every, INT, "0", 0, 100000000, "", "checkpoint every N iterations of a level; 0: not by count")
NST_KEY(checkpoint, minutes, FLOAT, "0", 0, 1000000, "", "checkpoint every M minutes of wall time (rank 0's clock); 0: not by time")

/* [gpu] */
NST_KEY(gpu, binding, ENUM, "auto", 0, 0, "auto|local_rank|visible0", "which GPU a rank drives: auto and local_rank = the rank's index among the ranks of its node, modulo the GPUs it sees; visible0 = the first GPU it sees (the launcher gives each rank its own, e.g. srun --gpus-per-task=1)")
NST_KEY(gpu, share, BOOL, "false", 0, 0, "", "allow more ranks on a node than it has GPUs (ranks then share GPUs, split their memory, and the Gram allreduce goes through MPI instead of NCCL); otherwise that is an error")

NST_KEY(gpu, graphs, BOOL, "false", 0, 0, "", "record an iteration that reports nothing once as a CUDA graph and replay it (one launch instead of hundreds), where every such iteration makes the same calls: one rank, exact tiling, Adam; an iteration that cannot be recorded runs as before, with a note. Off until measured on a GPU (docs/GPUS.md)")
NST_KEY(gpu, conv_algorithms, ENUM, "heuristic", 0, 0, "heuristic|timed", "how each convolution's cuDNN algorithm is chosen, per layer, direction and tile size, among the deterministic ones without transforms: heuristic (cuDNN's heuristics, no timing) or timed (cuDNN's Find runs each once and the fastest is taken; with gpu.conv_choices kept for reruns). Heuristic until timed is measured on a GPU (docs/GPUS.md)")
NST_KEY(gpu, conv_choices, PATH, "", 0, 0, "", "with gpu.conv_algorithms = timed: a file of the timed choices, read at start and added to (per GPU model, cuDNN version and precision; ranks and jobs may share it), so that a rerun takes the same algorithms, the same bits, without timing; empty: timed afresh each run")
NST_KEY(gpu, nccl_timeout, FLOAT, "600", 1, 86400, "", "seconds an NCCL Gram allreduce may make no progress before every rank is aborted with one message (a dead or hung peer)")

/* [metrics] */
NST_KEY(metrics, path, PATH, "", 0, 0, "", "JSON-lines log: one object per print interval (level, iteration, loss terms, per-phase times min/max/mean over ranks, memory, GPU samples) and events; empty: none")
NST_KEY(metrics, prometheus, PATH, "", 0, 0, "", "Prometheus textfile (node_exporter textfile collector), rewritten atomically every print interval; empty: none")
NST_KEY(metrics, gpu, ENUM, "auto", 0, 0, "auto|on|off", "GPU monitoring through NVML loaded at run time: auto when the backend runs on a GPU, on whenever NVML finds one, off")
NST_KEY(metrics, gpu_interval, FLOAT, "1", 0.05, 3600, "", "seconds between NVML samples")

/* [input] */
NST_KEY(input, max_megapixels, FLOAT, "100000", 0.000001, 1000000, "", "largest input image in megapixels (TIFF is read by region); larger inputs are refused before any allocation")
NST_KEY(input, max_whole_megapixels, FLOAT, "256", 0.000001, 1000000, "", "largest PNG or JPEG input in megapixels: those formats are decoded whole on one rank; use a tiled TIFF above")
