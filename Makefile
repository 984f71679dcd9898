# nstbatch Makefile.
#
#   make            build ./nstbatch (announces every dependency it probes)
#   make demo       install missing Debian packages, build, render configs/demo.ini
#   make demo-figure  make demo, then docs/demo.jpg (content | style | result) from it
#   make demo-video  a generated clip to configs/clip/stylised.mp4: the temporal loss, and independent frames beside it
#   make demo-video-figure  make demo-video, then docs/video.jpg (frames and their warping error, temporal against independent)
#   make demo-masks  the same for configs/masks.ini: two styles split by a drawn mask
#   make demo-masks-figure  make demo-masks, then docs/masks.jpg (content | mask | result)
#   make print-figure  a print and its preview: the demo at 1024 and 4096 px, docs/print.jpg and bench/results/print_preview.md
#   make test       install missing Debian packages, build, run the test suite
#   make asan       build/asan/nstbatch with AddressSanitizer + UBSan
#   make fuzz       the libFuzzer targets (clang)
#   make bench      the CPU benchmark against PyTorch: fp32 and bf16 (needs scripts/install-deps.sh --dev)
#   make bench-avx2 the same with both programs capped at AVX2 (ONEDNN_MAX_CPU_ISA and its peers)
#   make bench-auto run.precision = auto against fp32 and bf16 on this CPU (bench/results/auto_precision.md)
#   make bench-bf16 what bf16 changes in a render: losses and images against fp32, a 1000-iteration bf16 render
#   make bench-conv the convolution measurement behind the oneDNN choice
#   make bench-gpu  one GPU: convolutions per layer, the iteration against PyTorch, memory, largest tile
#   make bench-gpu-frame  one GPU: a 3840x2160 frame tiled and in one tile, seconds and SSIM
#   make bench-scaling  strong and weak scaling over 1, 2 and 4 ranks
#   make bench-cheap    the cheap tiling mode against the exact one
#   make bench-masks    masked renders against the same styles blended
#   make bench-io   gigapixel read/write throughput (BigTIFF, HDF5) on 1, 2, 4 ranks against vips tiffsave
#   make bench-dzi  a Deep Zoom pyramid written by nstbatch and nstbatch-dzi against vips dzsave
#   make bench-video  the video mode: flicker against independent frames, convergence, seconds per Full HD frame
#   make bench-batch    one batch of small jobs (packed and not) against a loop of runs
#   make bench-ckpt     checkpoint layout: per-rank files against one parallel HDF5 file
#   make bench-dryrun   --dry-run's time estimate against the real render
#   make bench-quality  time to quality: nstbatch against two PyTorch tools at their defaults (peers in bench/peers/)
#   make weights    download the Keras VGG-19 weights into models/ (checks the MD5)
#   make install PREFIX=DIR  nstbatch and its tools in DIR/bin, the manual page, the Slurm templates, the docs
#   make viewer     npm ci in viewer/: OpenSeadragon for the Deep Zoom viewer page (make all does it where npm is)
#   make gpu-bundle  build/gpu-bundle/nstbatch-gpu-VERSION.tar.gz: nstbatch, its GPU tests and benchmark with
#                   their libraries and Open MPI, for a GPU node without them (docs/GPUS.md); prints its path last
#   make clean
#
# Knobs: NO_CUDA=1 (skip the CUDA side even where nvcc exists), NO_FFMPEG=1, NO_OPENCV=1 (build as if
# FFmpeg's or OpenCV's libraries were absent), CUDA_HOME, NVCC_GENCODE, BUILD=build, V=1 (show
# commands), CFLAGS_EXTRA.

BUILD       ?= build
CUDA_HOME   ?= /usr/local/cuda
# GPU code: SASS for sm_80 (A100; also runs on sm_86/87/89), sm_90 (H100, H200) and sm_100 (B200, B300;
# where this nvcc knows it: CUDA 12.8+), and compute_90 PTX that the driver compiles at first load on
# any newer GPU, which would otherwise fail with "no kernel image is available" (cached by the driver).
NVCC_GENCODE ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
                $(if $(NVCC),$(shell $(NVCC) --list-gpu-arch 2>/dev/null | grep -qx compute_100 && echo -gencode arch=compute_100,code=sm_100)) \
                -gencode arch=compute_90,code=compute_90
VERSION     := 0.1.0

ifeq ($(V),1)
Q :=
else
Q := @
endif

# ---- dependency probes (pkg-config and header/compile checks, never dpkg) ----------------------
MPICC     := $(shell command -v mpicc 2>/dev/null)
MPI_VER   := $(shell mpirun --version 2>/dev/null | head -n1)
HDF5_PC   := $(shell pkg-config --exists hdf5-openmpi 2>/dev/null && echo hdf5-openmpi)
HDF5_PAR  := $(if $(HDF5_PC),$(shell for d in $$(pkg-config --cflags-only-I $(HDF5_PC) | sed 's/-I//g'); do \
               grep -qs 'define H5_HAVE_PARALLEL 1' $$d/H5pubconf.h && echo yes && break; done))
TIFF_VER  := $(shell pkg-config --modversion libtiff-4 2>/dev/null)
PNG_VER   := $(shell pkg-config --modversion libpng 2>/dev/null)
JPEG_VER  := $(shell pkg-config --modversion libjpeg 2>/dev/null)
DNNL_OK   := $(shell printf '\043include <oneapi/dnnl/dnnl.h>\nint main(void){return dnnl_version()->major < 2;}\n' | \
               cc -x c - -ldnnl -o /dev/null 2>/dev/null && echo yes)
DNNL_VER  := $(shell grep -h 'define DNNL_VERSION_\(MAJOR\|MINOR\|PATCH\)' /usr/include/oneapi/dnnl/dnnl_version.h 2>/dev/null | awk '{printf "%s%s", sep, $$3; sep="."}')
NVCC      := $(if $(NO_CUDA),,$(shell test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc || command -v nvcc 2>/dev/null))
NVCC_VER  := $(if $(NVCC),$(shell $(NVCC) --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p'))
CUDNN_OK  := $(shell test -f $(CUDA_HOME)/include/cudnn.h -o -f /usr/include/cudnn.h -o -f /usr/include/x86_64-linux-gnu/cudnn.h && echo yes)
CUBLAS_OK := $(shell test -f $(CUDA_HOME)/include/cublas_v2.h && echo yes)
NCCL_OK   := $(shell test -f $(CUDA_HOME)/include/nccl.h -o -f /usr/include/nccl.h && echo yes)
# OpenCV's video module (DIS optical flow, flow/dis.cpp): optional, Debian's libopencv-video-dev
OPENCV_OK := $(if $(NO_OPENCV),,$(shell test -f /usr/include/opencv4/opencv2/video/tracking.hpp && echo yes))
# FFmpeg's libraries (video files in and out, io/video/video_read.c, io/video/video_write.c): Debian's libav*-dev
FFMPEG_PC  := libavformat libavcodec libswscale libavutil
FFMPEG_OK  := $(if $(NO_FFMPEG),,$(shell pkg-config --exists $(FFMPEG_PC) 2>/dev/null && echo yes))
FFMPEG_VER := $(if $(FFMPEG_OK),$(shell pkg-config --modversion $(FFMPEG_PC) | paste -sd/ -))
NPM       := $(shell command -v npm 2>/dev/null)

# ---- flags ------------------------------------------------------------------------------------
# Paths of the checkout (and the compiler's, the flags) baked into the programs or hashed into stamps
# pass through the shell: a folder named O'Brien or "x" must not end the quoting. shq: one shell
# word for any text (single quotes, a ' inside written '\''); cstr: a C string literal of it (\ and
# " escaped)
shq  = '$(subst ','\'',$(1))'
cstr = "$(subst ",\",$(subst \,\\,$(1)))"
# sum: a checksum of any text (a stamp's name: the flags, compilers and paths it stands for)
sum  = $(shell printf '%s\n' $(call shq,$(1)) | cksum | cut -d' ' -f1)
CC      := $(if $(MPICC),$(MPICC),mpicc)
DEPCFLAGS := $(if $(HDF5_PC),$(shell pkg-config --cflags $(HDF5_PC))) $(shell pkg-config --cflags libtiff-4 libpng libjpeg 2>/dev/null)
# PMIx's header only, for mpi/launch_fence.c's types (the library is Open MPI's, found at run time)
DEPCFLAGS += $(shell pkg-config --cflags-only-I pmix 2>/dev/null)
DEPLIBS   := $(if $(HDF5_PC),$(shell pkg-config --libs $(HDF5_PC))) $(shell pkg-config --libs libtiff-4 libpng libjpeg 2>/dev/null) -ldnnl
WARN    := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wformat=2 -Wno-format-nonliteral
CFLAGS  ?= -O3 -g
ALLCFLAGS := -std=gnu11 $(CFLAGS) $(WARN) -fopenmp -DNST_VERSION='"$(VERSION)"' $(DEPCFLAGS) -I. $(CFLAGS_EXTRA)
LDLIBS  := $(DEPLIBS) -fopenmp -lm
ifneq ($(NVCC),)
ifeq ($(CUDNN_OK)$(CUBLAS_OK),yesyes)
CUDA_OBJ := $(sort $(wildcard kernels/cuda/*.cu))
LDLIBS   += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 $(if $(NCCL_OK),-lnccl) -lcudnn -lcudart -ldl -lstdc++
ALLCFLAGS += -DNST_HAVE_CUDA -I$(CUDA_HOME)/include $(if $(NCCL_OK),-DNST_HAVE_NCCL)
FLAVOUR  := cuda
else
$(error nvcc found at $(NVCC) but cuDNN or cuBLAS headers are missing: install them or build with NO_CUDA=1)
endif
else
CUDA_OBJ := kernels/cuda/cuda_none.c
FLAVOUR  := cpu
endif
# the flags and libraries without FFmpeg's and OpenCV's (the gpu-bundle's lean programs)
CORE_CFLAGS := $(ALLCFLAGS)
CORE_LDLIBS := $(LDLIBS)

# FFmpeg's and OpenCV's code goes into the video plugin, $(BUILD)/lib/nstbatch-video.so, that the
# programs load at their first video file or flow (util/plugin.h): none of them links those
# libraries (about 120 with their own), so a process that needs none does not load them. The
# plugin's sources are PLUGIN_SRC; the library gets each part's loader (video_load.c,
# dis_load.c), or without the part its refusal (video_none.c; dis_none.c is empty with OpenCV).
ifeq ($(OPENCV_OK),yes)
ALLCFLAGS += -DNST_HAVE_OPENCV
PLUGIN_LIBS += -lopencv_video -lopencv_imgproc -lopencv_core -lstdc++
PLUGIN_SRC  += flow/dis.cpp flow/dis_entry.c
else
PLUGIN_SKIP += flow/dis_load.c
endif

# without FFmpeg, io/video/video_none.c refuses video files (image sequences still work)
VIDEO_FFMPEG := io/video/video_read.c io/video/video_write.c
ifeq ($(FFMPEG_OK),yes)
FFMPEG_CFLAGS := $(shell pkg-config --cflags $(FFMPEG_PC))
FFMPEG_LIBS   := $(shell pkg-config --libs $(FFMPEG_PC))
ALLCFLAGS += -DNST_HAVE_FFMPEG $(FFMPEG_CFLAGS)
PLUGIN_LIBS += $(FFMPEG_LIBS)
PLUGIN_SRC  += $(VIDEO_FFMPEG) io/video/video_entry.c
PLUGIN_SKIP += io/video/video_none.c
else
PLUGIN_SKIP += io/video/video_load.c
endif
# the plugin's own files never go into the library; VIDEO_SKIP: what the library leaves out
VIDEO_SKIP := $(VIDEO_FFMPEG) io/video/video_entry.c flow/dis_entry.c $(PLUGIN_SKIP)
ifneq ($(PLUGIN_SRC),)
PLUGIN := $(BUILD)/lib/nstbatch-video.so
# every program exports what the plugin calls back (util/plugin.syms)
LDLIBS += -Wl,--dynamic-list=util/plugin.syms
endif

BUILD_FLAGS_DEF := -DNST_BUILD_FLAGS=$(call shq,$(call cstr,$(FLAVOUR) build: $(CC) $(CFLAGS)))
ALLCFLAGS += $(BUILD_FLAGS_DEF)

# lib_src(SKIP): the library's C sources, less SKIP; the viewer page and nstbatch-view's server among them
lib_src = $(sort $(filter-out $(1),$(wildcard util/*.c tiler/*.c io/*.c io/*/*.c flow/*.c video/*.c kernels/*.c kernels/cpu/*.c kernels/check/*.c nst/*/*.c mpi/*.c))) \
          $(sort $(filter-out viewer/view_main.c,$(wildcard viewer/*.c)))
LIB_SRC := $(call lib_src,$(VIDEO_SKIP))
# The CUDA objects see none of CFLAGS (nvcc's own -O3, the gencodes), so a build with other CFLAGS
# (make asan: CU_DIR=its parent's) links the main build's: one nvcc pass of about 40 s, not two.
CU_DIR  ?= $(BUILD)/obj
CU_OBJS := $(patsubst %.cu,$(CU_DIR)/%.o,$(filter %.cu,$(CUDA_OBJ)))
LIB_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRC)) $(CU_OBJS) $(patsubst %,$(BUILD)/obj/%.o,$(basename $(filter-out %.cu,$(CUDA_OBJ))))
LIB     := $(BUILD)/libnst.a
TESTS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(sort $(wildcard tests/test_*.c)))  # test_gram_tiled runs under mpirun
TOOLS   := $(BUILD)/tools/draw_demo_images $(BUILD)/tools/draw_mask $(BUILD)/tools/make_test_clip $(BUILD)/tools/nstbatch-flicker $(BUILD)/tools/demo_figure $(BUILD)/tools/make_test_tiff $(BUILD)/tests/png_probe $(BUILD)/tests/image_diff $(BUILD)/tests/rss_run $(BUILD)/tests/idle_timeout \
           $(BUILD)/tests/fake-nvml/libnvidia-ml.so.1

.PHONY: install install-viewer viewer viewer-if-online all demo demo-video demo-video-figure demo-figure demo-masks demo-masks-figure print-figure test test-run asan fuzz bench bench-avx2 bench-auto bench-bf16 bench-gpu bench-gpu-frame bench-conv bench-scaling bench-cheap bench-masks bench-io bench-dzi bench-video bench-video-iterations bench-batch bench-ckpt bench-dryrun bench-quality weights deps test-deps check-deps clean demo-images gpu-bundle gpu-bundle-lean
all: check-deps nstbatch nstbatch-dzi nstbatch-view $(if $(NPM),viewer-if-online)

# The flavour stamp: objects rebuild when the compiler, flags or CUDA switch change.
STAMP := $(BUILD)/flavour-$(FLAVOUR)-$(call sum,$(CC) $(ALLCFLAGS) $(NVCC) $(NVCC_GENCODE))
$(STAMP):
	@mkdir -p $(BUILD) && rm -f $(BUILD)/flavour-* && touch $@

ok = $(if $(1),[ok],[--])
check-deps:
	@echo "nstbatch $(VERSION): dependencies"
	@echo "  $(call ok,$(MPICC)) Open MPI     $(if $(MPICC),$(MPI_VER) ($(MPICC)),not found: required)"
	@echo "  $(call ok,$(HDF5_PAR)) HDF5        $(if $(HDF5_PC),$(HDF5_PC)$(if $(HDF5_PAR), (parallel), (NOT parallel)),not found: required (libhdf5-openmpi-dev))"
	@echo "  $(call ok,$(TIFF_VER)) libtiff     $(if $(TIFF_VER),$(TIFF_VER),not found: required)"
	@echo "  $(call ok,$(PNG_VER)) libpng      $(if $(PNG_VER),$(PNG_VER),not found: required)"
	@echo "  $(call ok,$(JPEG_VER)) libjpeg     $(if $(JPEG_VER),$(JPEG_VER) (libjpeg-turbo),not found: required)"
	@echo "  $(call ok,$(DNNL_OK)) oneDNN      $(if $(DNNL_OK),$(DNNL_VER): CPU convolutions,not found: required (libdnnl-dev))"
	@echo "  $(call ok,$(NVCC)) nvcc        $(if $(NVCC),CUDA $(NVCC_VER) ($(NVCC)): CUDA side built,$(if $(NO_CUDA),disabled by NO_CUDA=1,not found): CPU-only build)"
	@echo "  $(call ok,$(CUDNN_OK)) cuDNN       $(if $(CUDNN_OK),found (for the CUDA backend),not found (optional))"
	@echo "  $(call ok,$(CUBLAS_OK)) cuBLAS      $(if $(CUBLAS_OK),found (for the CUDA backend),not found (optional))"
	@echo "  $(call ok,$(NCCL_OK)) NCCL        $(if $(NCCL_OK),found (for the Gram allreduce on GPUs),not found (optional))"
	@echo "  $(call ok,$(OPENCV_OK)) OpenCV      $(if $(OPENCV_OK),video module found (DIS optical flow),$(if $(NO_OPENCV),disabled by NO_OPENCV=1,not found) (optional: libopencv-video-dev, for optical flow))"
	@echo "  $(call ok,$(FFMPEG_OK)) FFmpeg      $(if $(FFMPEG_OK),libavformat/libavcodec/libswscale/libavutil $(FFMPEG_VER): video files,$(if $(NO_FFMPEG),disabled by NO_FFMPEG=1,not found) (optional: video files; libavformat-dev libavcodec-dev libswscale-dev libavutil-dev))"
	@echo "  $(call ok,$(NPM)) npm         $(if $(NPM),found (make viewer: OpenSeadragon for the viewer page),not found (optional: the Deep Zoom viewer page needs it once, make viewer))"
	@test -n "$(MPICC)" -a -n "$(HDF5_PAR)" -a -n "$(TIFF_VER)" -a -n "$(PNG_VER)" -a -n "$(JPEG_VER)" -a -n "$(DNNL_OK)" || \
	  { echo "nstbatch: missing required dependencies: run scripts/install-deps.sh (or make deps)" >&2; exit 1; }

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

# ---- the library, the program ----------------------------------------------------------------
$(BUILD)/obj/%.o: %.c $(STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC    $<")
	$(Q)$(CC) $(ALLCFLAGS) -MMD -MP -c $< -o $@

CXXFLAGS_NST := -O2 -std=c++17 -I. -I/usr/include/opencv4 -Wall -Wextra -Wno-unused-parameter -fopenmp
$(BUILD)/obj/%.o: %.cpp $(STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CXX   $<")
	$(Q)$(CXX) $(CXXFLAGS_NST) -MMD -MP -c $< -o $@

# (their stamp: nvcc and the gencodes only, so the asan build finds them current)
CU_STAMP := $(CU_DIR)/nvcc-$(call sum,$(NVCC) $(NVCC_GENCODE))
$(CU_STAMP):
	@mkdir -p $(CU_DIR) && rm -f $(CU_DIR)/nvcc-* && touch $@

$(CU_DIR)/%.o: %.cu $(CU_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC  $<")
	$(Q)$(NVCC) -O3 -std=c++17 -I. $(NVCC_GENCODE) -Xcompiler -Wall -MMD -MP -c $< -o $@

# (every program linked with the library can load the plugin: it comes with it)
$(LIB): $(LIB_OBJ) | $(PLUGIN)
	$(Q)rm -f $@ && ar rcs $@ $(LIB_OBJ)

# the video plugin (util/plugin.h): position-independent objects with only the tables' entries
# visible, linked against FFmpeg and OpenCV; refused where it calls an nst_ function that
# util/plugin.syms does not export
$(BUILD)/pic/%.o: %.c $(STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC    $< (video plugin)")
	$(Q)$(CC) $(ALLCFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@
$(BUILD)/pic/%.o: %.cpp $(STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CXX   $< (video plugin)")
	$(Q)$(CXX) $(CXXFLAGS_NST) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@
PLUGIN_OBJ := $(patsubst %,$(BUILD)/pic/%.o,$(basename $(PLUGIN_SRC)))
-include $(PLUGIN_OBJ:.o=.d)
$(BUILD)/lib/nstbatch-video.so: $(PLUGIN_OBJ) util/plugin.syms io/video/plugin_calls.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD    $@")
	$(Q)$(CC) $(CFLAGS) -shared -fopenmp -o $@.part $(PLUGIN_OBJ) $(PLUGIN_LIBS)
	$(Q)missing=$$(nm -D --undefined-only $@.part | awk '$$2 ~ /^nst_/ {print $$2}' | while read -r f; do \
	  grep -qE "^ *$$f;" util/plugin.syms || echo " $$f"; done); \
	  for f in $$(sed -n 's/^ *\(nst_[a-z0-9_]*\);$$/\1/p' util/plugin.syms); do grep -q "(void \*)$$f," io/video/plugin_calls.c || missing="$$missing $$f"; done; \
	  if [ -n "$$missing" ]; then echo "$@: calls$$missing, not in both util/plugin.syms and io/video/plugin_calls.c: add it to both"; rm -f $@.part; exit 1; fi
	$(Q)mv -f $@.part $@
# What the program and the plugin bake in: the build tree's plugin (util/plugin.c looks there last)
# and a checksum of the seam's headers (util/plugin.h: a plugin of other headers is refused). A
# stamp per pair: the three files that use them compile again when the tree moves or a header changes.
PLUGIN_SEAM  := util/plugin.h util/plugin.syms util/status.h util/mem.h io/video/clip.h io/video/video_parts.h io/video/flo.h \
                io/image/pixels.h io/atomic_file.h flow/dis.h
PLUGIN_ID    := $(shell cat $(PLUGIN_SEAM) 2>/dev/null | cksum | cut -d' ' -f1)
PLUGIN_TREE  := $(abspath $(BUILD))/lib/nstbatch-video.so
PLUGIN_STAMP := $(BUILD)/plugin-$(call sum,$(PLUGIN_ID) $(PLUGIN_TREE))
$(PLUGIN_STAMP):
	@mkdir -p $(BUILD) && rm -f $(BUILD)/plugin-* && touch $@
$(BUILD)/obj/util/plugin.o $(BUILD)/pic/io/video/video_entry.o $(BUILD)/pic/flow/dis_entry.o: $(PLUGIN_STAMP)
$(BUILD)/obj/util/plugin.o: ALLCFLAGS += -DNST_PLUGIN_TREE=$(call shq,$(call cstr,$(PLUGIN_TREE))) -DNST_PLUGIN_ID=$(PLUGIN_ID)u
$(BUILD)/pic/io/video/video_entry.o $(BUILD)/pic/flow/dis_entry.o: ALLCFLAGS += -DNST_PLUGIN_ID=$(PLUGIN_ID)u

# a program copied into place under another name, then renamed: a run of the old one goes on
# (cp over a running program fails: "Text file busy")
publish = $(Q)cp $< $@.part && mv -f $@.part $@

$(BUILD)/nstbatch: $(BUILD)/obj/main.o $(LIB)
	@$(if $(Q),echo "  LD    $@")
	$(Q)$(CC) $(CFLAGS) -fopenmp -o $@ $^ $(LDLIBS)

nstbatch: $(BUILD)/nstbatch
	$(publish)

# a Deep Zoom pyramid from a finished TIFF (tools/nstbatch-dzi.c); beside nstbatch-view, which runs it
$(BUILD)/nstbatch-dzi: $(BUILD)/tools/nstbatch-dzi
	$(publish)
nstbatch-dzi: $(BUILD)/nstbatch-dzi
	$(publish)

-include $(LIB_OBJ:.o=.d) $(BUILD)/obj/main.d $(BUILD)/obj/viewer/view_main.d

# ---- the viewer: nstbatch-view, the page's assets (docs/VIEWER.md) ----------------------------
# The source tree's viewer/ is where an uninstalled nstbatch finds the page's assets; an installed
# one looks in ../share/nstbatch/viewer beside its program first (viewer/assets.c).
$(BUILD)/obj/viewer/assets.o: ALLCFLAGS += -DNST_VIEWER_DIR=$(call shq,$(call cstr,$(CURDIR)/viewer))

# linked with the plain C compiler: the server needs none of MPI, HDF5, oneDNN or CUDA
$(BUILD)/nstbatch-view: $(BUILD)/obj/viewer/view_main.o $(LIB)
	@$(if $(Q),echo "  LD    $@")
	$(Q)cc $(CFLAGS) -o $@ $^ -lm

nstbatch-view: $(BUILD)/nstbatch-view
	$(publish)

# OpenSeadragon, pinned in viewer/package-lock.json, from the npm registry (again when the lock changes)
VIEWER_OSD := viewer/node_modules/openseadragon/build/openseadragon/openseadragon.min.js
viewer: $(VIEWER_OSD)
$(VIEWER_OSD): viewer/package.json viewer/package-lock.json
	@command -v npm >/dev/null || { echo "make viewer: npm not found: install Node.js and npm (scripts/install-deps.sh --test)" >&2; exit 1; }
	cd viewer && npm ci --prefer-offline --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

# make all runs make viewer where npm is, and goes on without it where the registry cannot be reached
viewer-if-online:
	@$(MAKE) -q --no-print-directory viewer 2>/dev/null || $(MAKE) --no-print-directory viewer || echo "nstbatch: note: the viewer page's assets (OpenSeadragon) are missing: run make viewer when the npm registry can be reached; nstbatch works without them, except for the viewer page" >&2

# the programs, and the page's assets in share/nstbatch/viewer/{web,openseadragon} (a note, not a
# failure, where make viewer has not run)
install-viewer: all
	install -d $(IDIR)/bin $(IDIR)/share/nstbatch/viewer/web
	install -m 755 $(BUILD)/nstbatch-view $(IDIR)/bin/
	install -m 644 viewer/web/viewer.html viewer/web/viewer.js viewer/web/viewer.css $(IDIR)/share/nstbatch/viewer/web/
	@if [ -f $(VIEWER_OSD) ]; then \
	  osd=$$(dirname $(VIEWER_OSD)); d=$(call shq,$(INSTALL_DIR)/share/nstbatch/viewer/openseadragon); \
	  install -d "$$d/images" && install -m 644 $$osd/openseadragon.min.js viewer/node_modules/openseadragon/LICENSE.txt "$$d/" && \
	  install -m 644 $$osd/images/*.png "$$d/images/"; \
	else echo "nstbatch: note: OpenSeadragon is not installed (run make viewer, then make install again): the viewer page cannot be written" >&2; fi

# ---- sanitizer build (the bad-input table runs under it) ---------------------------------------
# -g1: the line tables the sanitizers' reports name (file:line in every frame), without the
# locals' debug info, which took a quarter of these builds' compile time
ASAN_FLAGS := -O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
asan: check-deps $(CU_OBJS)
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan CU_DIR=$(CU_DIR) CFLAGS="$(ASAN_FLAGS)" $(BUILD)/asan/nstbatch

# ---- tools and tests --------------------------------------------------------------------------
$(BUILD)/tools/%: tools/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLCFLAGS) -o $@ $< $(LIB) $(LDLIBS)

$(BUILD)/tests/png_probe: tests/png_probe.c
	@mkdir -p $(dir $@)
	$(Q)cc -O2 -o $@ $< $(shell pkg-config --cflags --libs libpng 2>/dev/null)

$(BUILD)/tests/rss_run: tests/rss_run.c
	@mkdir -p $(dir $@)
	$(Q)cc -O2 -o $@ $<

$(BUILD)/tests/idle_timeout: tests/idle_timeout.c
	@mkdir -p $(dir $@)
	$(Q)cc -O2 -Wall -Wextra -o $@ $<

# a stand-in NVML for the GPU-monitoring tests (no GPU in CI)
$(BUILD)/tests/fake-nvml/libnvidia-ml.so.1: tests/fake_nvml.c
	@mkdir -p $(dir $@)
	$(Q)cc -O2 -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

$(BUILD)/tests/image_diff: tests/image_diff.c $(LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLCFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# the CUDA side of a build without CUDA, whatever this build has: from cuda_none.c itself
$(BUILD)/tests/test_cuda_none: tests/test_cuda_none.c tests/test.h kernels/cuda/cuda_none.c util/nvidia.c util/status.c
	@mkdir -p $(dir $@)
	$(Q)cc -std=gnu11 -O2 -Wall -Wextra -I. -o $@ tests/test_cuda_none.c kernels/cuda/cuda_none.c util/nvidia.c util/status.c

# our own CUDA kernels' device code on the CPU (tests/cuda_emu.h), with the sanitizers: no nvcc, no GPU
# (-O0: the compile 5 CPU seconds where -O1 took 12, the run 0.7 s longer)
TESTS += $(BUILD)/tests/test_cuda_emu
$(BUILD)/tests/test_cuda_emu: tests/test_cuda_emu.cpp tests/cuda_emu.h tests/test.h $(wildcard kernels/cuda/*.cuh) kernels/xsum_core.h $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CXX   $<")
	$(Q)$(CXX) -std=c++17 -O0 -g1 -Wall -Wextra -Wno-unknown-pragmas -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. -o $@ $< $(LIB) -lm

$(BUILD)/tests/%: tests/%.c tests/test.h tests/naive.h tests/kernel_paths.h $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC    $<")
	$(Q)$(CC) $(ALLCFLAGS) -o $@ $< $(LIB) $(LDLIBS)

FUZZ_BASE   := -std=gnu11 -g1 -O1 -I. $(DEPCFLAGS) # (-g1: as ASAN_FLAGS)
FUZZ_CFLAGS := $(FUZZ_BASE) -fsanitize=fuzzer,address,undefined
FUZZ_IO := util/status.c util/mem.c io/image/pixels.c io/image/image.c io/image/png_read.c io/image/png_write.c \
           io/image/jpeg_read.c io/image/jpeg_write.c io/image/tiff_read.c io/image/tiff_write.c io/image/icc.c \
           io/image/tiff_msg.c io/atomic_file.c io/image/source.c io/image/resample.c tiler/rect.c
# the sources the targets share, compiled once (fuzzer-no-link: instrumented, libFuzzer's main at
# the link alone); three targets compiling them each took 5.5 CPU seconds more
fuzz_obj = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(1))
FUZZ_IO_OBJ := $(call fuzz_obj,$(FUZZ_IO))
$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(Q)clang $(FUZZ_BASE) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@
-include $(FUZZ_IO_OBJ:.o=.d)
fuzz: $(BUILD)/fuzz/fuzz_config $(BUILD)/fuzz/fuzz_image $(BUILD)/fuzz/fuzz_tiff $(BUILD)/fuzz/fuzz_flo $(if $(FFMPEG_OK),$(BUILD)/fuzz/fuzz_video)
$(BUILD)/fuzz/fuzz_config: tests/fuzz/fuzz_config.c io/config/config.c io/config/jobs.c util/text.c $(call fuzz_obj,util/status.c)
	@mkdir -p $(dir $@)
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $^
$(BUILD)/fuzz/fuzz_flo: tests/fuzz/fuzz_flo.c io/video/flo.c $(call fuzz_obj,io/atomic_file.c util/status.c util/mem.c)
	@mkdir -p $(dir $@)
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $^ -lm
# the video reader (FFmpeg itself is not instrumented: what is fuzzed is nstbatch's handling of it)
$(BUILD)/fuzz/fuzz_video: tests/fuzz/fuzz_video.c io/video/clip.c io/video/video.c io/video/video_seq.c io/video/video_read.c io/video/video_write.c $(FUZZ_IO_OBJ)
	@mkdir -p $(dir $@)
	$(Q)clang $(FUZZ_CFLAGS) $(FFMPEG_CFLAGS) -o $@ $^ $(FFMPEG_LIBS) $(shell pkg-config --libs libtiff-4 libpng libjpeg) -lm
$(BUILD)/fuzz/fuzz_image $(BUILD)/fuzz/fuzz_tiff: $(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_IO_OBJ)
	@mkdir -p $(dir $@)
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $^ $(shell pkg-config --libs libtiff-4 libpng libjpeg) -lm

# make test = install what is missing, then build and run everything in a fresh make (so the
# probes see the packages just installed).
test: test-deps
	@$(MAKE) --no-print-directory -j$$(nproc) test-run

test-run: all asan fuzz $(TESTS) $(TOOLS) demo-images $(BUILD)/bench/conv_layers $(BUILD)/bench/gram_layers gpu-bundle
	@tests/run.sh $(BUILD)

# ---- the GPU bundle (docs/GPUS.md, "The bundle") ---------------------------------------------
# nstbatch, test_backend_ops, image_diff, conv_layers and gram_layers as NO_FFMPEG=1 NO_OPENCV=1 would build them
# (the GPU nodes have neither library), linked from this build's objects: only the sources those
# switches change are compiled again, into build/gpu-bundle/obj. Which ones is derived in a second
# make (gpu-bundle-lean), once this build's objects and .d files exist: the C sources the switches
# add (io/video/video_none.c), those with a preprocessor line naming NST_HAVE_FFMPEG or NST_HAVE_OPENCV or
# including FFmpeg's or OpenCV's headers (flow/dis_none.c), and those whose .d lists a project header
# that does (none today). .cu and .cpp objects never see the switches' -D flags (their rules do not
# pass ALLCFLAGS); the FFmpeg and OpenCV sources themselves are left out. Then
# scripts/make-gpu-bundle.sh gathers the programs, their libraries and Open MPI into the tarball,
# again when one of its inputs in the checkout changes (after a system upgrade: rm the tarball).
BUNDLE_DIR := $(BUILD)/gpu-bundle
BUNDLE_TAR := $(BUNDLE_DIR)/nstbatch-gpu-$(VERSION).tar.gz
gpu-bundle: check-deps $(LIB) $(BUILD)/obj/main.o demo-images
	@$(MAKE) --no-print-directory gpu-bundle-lean

ifneq ($(filter gpu-bundle-lean,$(MAKECMDGOALS)),)
comma := ,
KNOB_RE    := ^[[:space:]]*\#([[:space:]]*include[[:space:]]*[<"](libav|libsw|libpostproc|opencv)|.*NST_HAVE_(FFMPEG|OPENCV))
KNOB_FILES := $(shell grep -lE '$(KNOB_RE)' $(wildcard *.c */*.[ch] */*/*.[ch] */*.cpp */*/*.cu))
KNOB_H     := $(notdir $(filter %.h,$(KNOB_FILES)))
MAIN_SRC   := $(LIB_SRC) $(CUDA_OBJ) main.c
LEAN_SRC   := $(call lib_src,$(VIDEO_FFMPEG) io/video/video_entry.c io/video/video_load.c flow/dis_entry.c flow/dis_load.c) $(CUDA_OBJ) main.c
# the .d files of this build's objects that list a knob header (matched by file name: at worst
# one compile too many)
LEAN_VIA_H := $(if $(KNOB_H),$(shell grep -lF $(addprefix -e ,$(KNOB_H)) /dev/null \
                $(patsubst %,$(BUILD)/obj/%.d,$(basename $(filter $(MAIN_SRC),$(LEAN_SRC))))))
LEAN_OWN   := $(sort $(filter-out $(MAIN_SRC),$(LEAN_SRC)) $(filter $(KNOB_FILES),$(LEAN_SRC)) \
                $(foreach f,$(LEAN_SRC),$(if $(filter $(BUILD)/obj/$(basename $(f)).d,$(LEAN_VIA_H)),$(f))))
$(if $(filter-out %.c,$(LEAN_OWN)),$(error gpu-bundle: $(filter-out %.c,$(LEAN_OWN)) would need compiling without FFmpeg/OpenCV: add a rule for it))
lean_obj    = $(if $(filter $(1),$(LEAN_OWN)),$(BUNDLE_DIR)/obj/$(basename $(1)).o,$(BUILD)/obj/$(basename $(1)).o)
LEAN_OBJ   := $(foreach f,$(filter-out main.c,$(LEAN_SRC)),$(call lean_obj,$(f)))
LEAN_MAIN  := $(call lean_obj,main.c)
LEAN_CFLAGS := $(CORE_CFLAGS) $(BUILD_FLAGS_DEF)
# no run path: the bundle's env.sh finds the CUDA libraries, wherever the node has them
LEAN_LDLIBS := $(filter-out -Wl$(comma)-rpath$(comma)%,$(CORE_LDLIBS))
LEAN_STAMP := $(BUNDLE_DIR)/flavour-$(call sum,$(CC) $(LEAN_CFLAGS))
LEAN_PROGS := $(addprefix $(BUNDLE_DIR)/bin/,nstbatch test_backend_ops image_diff conv_layers gram_layers)
BUNDLE_IN  := $(wildcard scripts/*.sh scripts/gpu-bundle/* configs/demo/*.png) tests/test_gpu_render.sh tests/lib.sh tests/idle.sh bench/gpu_frame.sh \
              bench/gpu_iteration.sh bench/profile_table.sh bench/torch_gatys.py configs/demo.ini
-include $(patsubst %.c,$(BUNDLE_DIR)/obj/%.d,$(LEAN_OWN))

$(LEAN_STAMP):
	@mkdir -p $(BUNDLE_DIR) && rm -f $(BUNDLE_DIR)/flavour-* && touch $@

$(BUNDLE_DIR)/obj/%.o: %.c $(LEAN_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC    $< (gpu-bundle: no FFmpeg, no OpenCV)")
	$(Q)$(CC) $(LEAN_CFLAGS) -MMD -MP -c $< -o $@

$(BUNDLE_DIR)/libnst.a: $(LEAN_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUNDLE_DIR)/bin/nstbatch: $(LEAN_MAIN) $(BUNDLE_DIR)/libnst.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD    $@")
	$(Q)$(CC) $(CFLAGS) -fopenmp -o $@ $^ $(LEAN_LDLIBS)

$(BUNDLE_DIR)/bin/test_backend_ops: tests/test_backend_ops.c tests/test.h tests/naive.h $(BUNDLE_DIR)/libnst.a
$(BUNDLE_DIR)/bin/image_diff: tests/image_diff.c $(BUNDLE_DIR)/libnst.a
$(BUNDLE_DIR)/bin/conv_layers: bench/conv_layers.c bench/bench_ops.h $(BUNDLE_DIR)/libnst.a
$(BUNDLE_DIR)/bin/gram_layers: bench/gram_layers.c bench/bench_ops.h $(BUNDLE_DIR)/libnst.a
$(filter-out %/nstbatch,$(LEAN_PROGS)):
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD    $@")
	$(Q)$(CC) $(LEAN_CFLAGS) -o $@ $(firstword $(filter %.c,$^)) $(BUNDLE_DIR)/libnst.a $(LEAN_LDLIBS)

# env.sh's probe of a node's cuDNN libraries (tools/cudnn_version.c): the headers' version
# and dlopen, nothing linked
$(BUNDLE_DIR)/bin/cudnn-version: tools/cudnn_version.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC    $@")
	$(Q)$(CC) -std=gnu11 -O2 -Wall -Wextra -I$(CUDA_HOME)/include -o $@ $< -ldl

# the suites' bound (tests/idle.sh), which test_gpu_render.sh puts on its renders
$(BUNDLE_DIR)/bin/idle_timeout: tests/idle_timeout.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -O2 -Wall -Wextra -o $@ $<

$(BUNDLE_TAR): $(LEAN_PROGS) $(BUNDLE_DIR)/bin/cudnn-version $(BUNDLE_DIR)/bin/idle_timeout $(BUNDLE_IN)
	@echo "gpu-bundle: compiled again without FFmpeg and OpenCV: $(LEAN_OWN); the rest from $(BUILD)/obj"
	$(Q)scripts/make-gpu-bundle.sh $(BUNDLE_DIR) $(VERSION)

gpu-bundle-lean: $(BUNDLE_TAR)
	@echo "$(BUNDLE_TAR)"
endif

# ---- the demo ---------------------------------------------------------------------------------
DEMO_IMAGES := configs/demo/content.png configs/demo/style.png configs/demo/style2.png
DEMO_MASKS  := configs/demo/sky.png configs/demo/ground.png
demo-images: $(DEMO_IMAGES) $(DEMO_MASKS)
$(DEMO_IMAGES) &: $(BUILD)/tools/draw_demo_images
	@mkdir -p configs/demo
	$(Q)$(BUILD)/tools/draw_demo_images configs/demo
# the masks demo's regions: the sky down to below the hills, and the rest (its complement)
$(DEMO_MASKS) &: $(BUILD)/tools/draw_mask configs/demo/content.png
	$(Q)$(BUILD)/tools/draw_mask configs/demo/sky.png --like configs/demo/content.png --split top:0.45 --feather 24 --complement configs/demo/ground.png

demo: deps
	@$(MAKE) --no-print-directory all demo-images
	mpirun --allow-run-as-root --bind-to none -np 1 ./nstbatch configs/demo.ini --set output.format=png,dzi
	@echo "look at it: ./nstbatch-view configs/demo/stylised.dzi (prints the address to open)"

# a short generated clip to .mp4 with the temporal loss, and as independent frames for comparison
demo-video: deps
	@$(MAKE) --no-print-directory all demo-images $(BUILD)/tools/make_test_clip
	$(BUILD)/tools/make_test_clip configs/clip --size 256x192 --frames 24 --motion all >/dev/null
	mpirun --allow-run-as-root --bind-to none -np 1 ./nstbatch configs/clip.ini --restart
	mpirun --allow-run-as-root --bind-to none -np 1 ./nstbatch configs/clip.ini --restart --set output.path=configs/clip/independent.mp4 --set video.temporal_weight=0
	@echo "compare them: configs/clip/stylised.mp4 (temporal) and configs/clip/independent.mp4 (frames on their own)"

# the README's video figure (docs/video.jpg): frames of both renders and their warping error
demo-video-figure: demo-video $(BUILD)/tools/nstbatch-flicker
	scripts/video-figure.sh

# two styles split by a mask: the style image's swirls in the sky, style2's mosaic below
demo-masks: deps
	@$(MAKE) --no-print-directory all demo-images
	mpirun --allow-run-as-root --bind-to none -np 1 ./nstbatch configs/masks.ini

# the README's picture (docs/demo.jpg) from the demo as make demo renders it; test_demo checks
# that it has not drifted from the render
demo-figure: demo $(BUILD)/tools/demo_figure
	$(BUILD)/tools/demo_figure configs/demo configs/demo/stylised.png docs/demo.jpg

# a print and its preview (docs/print.jpg, bench/results/print_preview.md): the demo at 1024 and
# 4096 px, one level and pyramid.levels = auto, the print brought down against its preview (SSIM);
# about 20 minutes on 2 cores (PREVIEW, PRINT, ITERS, MINITS, DIVISOR, NP: scripts/print-figure.sh)
print-figure: all demo-images $(BUILD)/tests/image_diff
	scripts/print-figure.sh

# the README's masks picture (docs/masks.jpg): content | sky mask | result of make demo-masks
demo-masks-figure: demo-masks $(BUILD)/tools/demo_figure
	$(BUILD)/tools/demo_figure --masks configs/demo configs/demo/masked.png docs/masks.jpg

# ---- benchmark and weights --------------------------------------------------------------------
bench: all $(BUILD)/bench/conv_layers $(BUILD)/bench/gram_layers
	bench/cpu_iteration.sh

# the same, both programs limited to AVX2: what the many clusters without AVX-512 get (bench/results/cpu_iteration_avx2.md)
bench-avx2: all $(BUILD)/bench/conv_layers $(BUILD)/bench/gram_layers
	ISA=AVX2 bench/cpu_iteration.sh

# bf16 against fp32: losses, SSIM with controls, a long bf16 render (bench/results/bf16_numerics.md)
bench-bf16: all demo-images $(BUILD)/tests/image_diff
	bench/bf16_numerics.sh

# one batch against a loop of runs, packed and unpacked (bench/results/batch_packing.md)
bench-batch: all demo-images
	bench/batch_packing.sh

# strong and weak scaling over ranks (bench/results/scaling.md)
bench-scaling: all demo-images
	bench/scaling.sh

# the cheap mode's cost and savings against exact (bench/results/cheap_mode.md)
bench-cheap: all demo-images $(BUILD)/tests/image_diff
	bench/cheap_mode.sh

# masks against the same styles blended: s/iteration and memory (bench/results/masks.md)
bench-masks: all demo-images
	bench/masks.sh

# gigapixel I/O: read and write throughput against libvips (bench/results/io_throughput.md)
bench-io: all demo-images $(BUILD)/tools/make_test_tiff
	bench/io_throughput.sh

# a Deep Zoom pyramid written by nstbatch (1 and 2 ranks) and nstbatch-dzi against vips dzsave (bench/results/dzi.md)
bench-dzi: all demo-images $(BUILD)/tools/make_test_tiff
	bench/dzi.sh

# the video mode's goals: flicker against independent frames, convergence, Full HD speed (bench/results/video.md)
bench-video: all demo-images $(BUILD)/tools/make_test_clip
	bench/video.sh

# the iterations a warm video frame needs: the defaults' clip at video.iterations = 250, 100, 50, 25 (bench/results/video_iterations.md)
bench-video-iterations: all demo-images $(BUILD)/tools/make_test_clip $(BUILD)/tests/image_diff
	bench/video_iterations.sh

# --dry-run's estimate against the render it predicts (bench/results/dryrun.md)
bench-dryrun: all demo-images
	bench/dryrun_accuracy.sh

# time to quality: nstbatch and two PyTorch tools at their defaults, one network, one float64 scorer
# (bench/results/quality.md; the peers' checkouts in PEERS, default bench/peers/; SIZES, FULL=1, TOOLS, VARIANTS)
bench-quality: all
	bench/quality.sh

# per-rank checkpoint files against one parallel HDF5 file (bench/results/checkpoint.md)
bench-ckpt: $(BUILD)/bench/checkpoint_format
	bench/checkpoint_format.sh
$(BUILD)/bench/checkpoint_format: bench/checkpoint_format.c $(LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLCFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# one GPU: per-layer convolutions, the whole iteration at tiles 1024..4096 against PyTorch, memory
# per megapixel, the largest tile (bench/results/gpu_iteration.md; needs a GPU and PyTorch)
# run.precision = auto against fp32 and bf16 on this CPU: a row per size in bench/results/auto_precision.md
bench-auto: all demo-images
	bench/auto_precision.sh

bench-gpu: all demo-images $(BUILD)/bench/conv_layers $(BUILD)/bench/gram_layers
	bench/gpu_iteration.sh
# a 3840x2160 frame on one GPU, in 1024 px tiles and in one tile: seconds, s/iter, SSIM between them
bench-gpu-frame: all demo-images $(BUILD)/tests/image_diff
	bench/gpu_frame.sh
$(BUILD)/bench/conv_layers: bench/conv_layers.c bench/bench_ops.h $(LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLCFLAGS) -o $@ $< $(LIB) $(LDLIBS)
$(BUILD)/bench/gram_layers: bench/gram_layers.c bench/bench_ops.h $(LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALLCFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# the measurement that chose oneDNN over im2col + OpenBLAS for the CPU convolutions (OpenBLAS from
# scripts/install-deps.sh --dev: nstbatch itself does not use it)
bench-conv: $(BUILD)/bench/cpu_conv_choice
	OMP_NUM_THREADS=$$(nproc) $(BUILD)/bench/cpu_conv_choice 512 384 | tee bench/results/cpu_conv_choice.md
$(BUILD)/bench/cpu_conv_choice: bench/cpu_conv_choice.c
	@mkdir -p $(dir $@)
	$(Q)cc -O3 -fopenmp -o $@ $< -ldnnl $(shell pkg-config --cflags --libs openblas 2>/dev/null || echo -lopenblas)

KERAS_VGG19 := vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5
KERAS_MD5   := 253f8cb515780f3b799900260a226db6
weights: models/$(KERAS_VGG19)
models/$(KERAS_VGG19):
	@mkdir -p models
	@for url in https://storage.googleapis.com/tensorflow/keras-applications/vgg19/$(KERAS_VGG19) \
	            https://github.com/fchollet/deep-learning-models/releases/download/v0.1/$(KERAS_VGG19); do \
	  echo "downloading $$url"; \
	  if curl -fL --retry 2 -o $@.part "$$url" 2>/dev/null || wget -q -O $@.part "$$url"; then break; fi; \
	done; \
	test -s $@.part || { rm -f $@.part; echo "weights: download failed (no internet?); fetch $(KERAS_VGG19) by hand into models/" >&2; exit 1; }; \
	sum=$$(md5sum $@.part | cut -d' ' -f1); \
	if [ "$$sum" != "$(KERAS_MD5)" ]; then rm -f $@.part; echo "weights: MD5 $$sum, expected $(KERAS_MD5): refusing the file" >&2; exit 1; fi; \
	mv $@.part $@ && printf 'weights: %s (MD5 ok); set model.weights = %s\n' $(call shq,$@) $(call shq,$(CURDIR)/$@)

# make install PREFIX=DIR (default /usr/local; DESTDIR for packagers): the programs in bin/, the
# video plugin in lib/nstbatch/ (where bin/nstbatch looks for it, util/plugin.h), the manual page
# made from --help, the Slurm templates with launch.sh in share/nstbatch/ (which is an
# NSTBATCH_HOME: it holds a link to bin/nstbatch), and the README, LICENSE and docs/ in share/doc/nstbatch/.
PREFIX ?= /usr/local
INSTALL_DIR = $(DESTDIR)$(PREFIX)
# (one shell word, whatever the prefix's name)
IDIR = $(call shq,$(INSTALL_DIR))
install: all install-viewer
	install -d $(IDIR)/bin $(IDIR)/share/man/man1 $(IDIR)/share/nstbatch/slurm $(IDIR)/share/doc/nstbatch/docs
	install -m 755 $(BUILD)/nstbatch $(BUILD)/nstbatch-dzi tools/nstbatch-plot tools/nstbatch-mpirun $(IDIR)/bin/
	$(if $(PLUGIN),install -d $(IDIR)/lib/nstbatch && install -m 644 $(PLUGIN) $(IDIR)/lib/nstbatch/)
	tools/help2man.sh $(BUILD)/nstbatch > $(IDIR)/share/man/man1/nstbatch.1
	install -m 644 slurm/*.sbatch $(IDIR)/share/nstbatch/slurm/
	install -m 755 slurm/launch.sh $(IDIR)/share/nstbatch/slurm/
	ln -sfn ../../bin/nstbatch $(IDIR)/share/nstbatch/nstbatch
	install -m 644 README.md LICENSE $(IDIR)/share/doc/nstbatch/
	install -m 644 docs/*.md docs/*.jpg $(IDIR)/share/doc/nstbatch/docs/
	@printf 'installed in %s: run %s/bin/nstbatch (add %s/bin to PATH); Slurm: NSTBATCH_HOME=%s/share/nstbatch\n' \
	  $(call shq,$(INSTALL_DIR)) $(call shq,$(PREFIX)) $(call shq,$(PREFIX)) $(call shq,$(PREFIX))

clean:
	rm -rf $(BUILD) nstbatch nstbatch-dzi nstbatch-view configs/demo
