/* kernels/cuda/gram_sums_kernels.cuh: the Gram sums g += sum over a region of (m_p f_p) f_p^T on
 * the FP64 tensor cores, read straight from the features in their storage type (bf16, fp16, fp32):
 * no fp64 copy of the chunk in memory, and only the upper triangle's blocks computed
 * (gram_sums_cuda.cu launches them: NSTBATCH_CUDA_GRAM=own). Device code that includes nothing:
 * nvcc includes it after cuda_impl.h, tests/test_cuda_emu.cpp after its host stand-in of CUDA,
 * which runs this very code on the CPU (the tensor-core step through its model of the fragments).
 *
 * The work. The c x c sums are cut into GS_BT x GS_BT blocks; only blocks (bi, bj) with bi <= bj
 * are computed (about half the FLOPs of the full product for many blocks, and in a diagonal block
 * the 16 x 8 tiles wholly below its diagonal are skipped too). The region's positions are cut into splits
 * of `per` positions (their number a function of the region's size and c only, never of the GPU,
 * so a GPU gives the same bits on every run); one thread block computes one block over one
 * split, its sums in fp64 registers, into a partial in scratch; k_gram_sums_add then adds each
 * entry's partials in split order into g. Nothing is added atomically: the result is the same
 * from run to run.
 *
 * Exactness, as the contract asks (kernels/backend.h): m_p f_p[i] is exact in double (24 + 24
 * significant bits), its product with f_p[j] rounds at most once, and every partial sum is in
 * double; alpha (1 / fscale^2, a power of two) scales the sum exactly. */

#define GS_BT 64              /* channels a block, each side */
#define GS_KT 32              /* positions a stage (a multiple of the MMA's k of 8) */
#define GS_LD (GS_BT + 4)     /* a stage's row stride in doubles: a warp's fragment loads meet each bank once a half-warp */
#define GS_THREADS 128        /* 4 warps, each a 32 x 32 quadrant of the block */
#define GS_PX 4096            /* positions a split of a large region */
#define GS_PX_MIN 512         /* ... of a smaller one, cut finer to give GS_CTAS thread blocks */
#define GS_CTAS 512           /* thread blocks a region is cut into at least, where GS_PX_MIN allows */
#define GS_PARTS ((size_t)1 << 12) /* partials at most (blocks x splits): GS_PARTS GS_BT^2 doubles, CUDA_CHUNK_ELEMS */

/* D (8 x 8) += A (8 x 4) B (4 x 8) in fp64 across the warp, PTX's mma.m8n8k4 .f64 (sm_80 and later;
 * lane l = 4 g + t): a = A[g][t], b = B[t][g], d = D[g][2t], D[g][2t + 1]. The host stand-in:
 * its model of the same fragments (tests/cuda_emu.h). */
__device__ __forceinline__ void gs_mma884(double &d0, double &d1, double a, double b)
{
#if defined(__CUDA_ARCH__)
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};" : "+d"(d0), "+d"(d1) : "d"(a), "d"(b));
#elif !defined(__CUDACC__)
    emu_mma_m8n8k4_f64(d0, d1, a, b);
#endif
}

/* D (16 x 8) += A (16 x 8, rows i) B (8 x 8, columns j) in fp64 across the warp, the fragments of
 * PTX's mma.m16n8k8 .f64 (lane l = 4 g + t): a = A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4];
 * b = B[t][g], B[t + 4][g]; d = D[g][2t], D[g][2t + 1], D[g + 8][2t], D[g + 8][2t + 1]. sm_90 and
 * later run it as one instruction (a shape Hopper added: fewer instructions for the same work, and,
 * by other projects' reports, the way to cuBLAS's FP64 speed there; to be measured); sm_80 to
 * sm_89 as four mma.m8n8k4 .f64 (k 0-3, then 4-7, for rows g and rows g + 8). The host stand-in
 * models either (tests/cuda_emu.h: emu_mma_sm80 picks the four). */
__device__ __forceinline__ void gs_mma(double *d, const double *a, const double *b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#else
#if !defined(__CUDACC__)
    if (!emu_mma_sm80) {
        emu_mma_m16n8k8_f64(d, a, b);
        return;
    }
#endif
    gs_mma884(d[0], d[1], a[0], b[0]);
    gs_mma884(d[0], d[1], a[2], b[1]);
    gs_mma884(d[2], d[3], a[1], b[0]);
    gs_mma884(d[2], d[3], a[3], b[1]);
#endif
}

/* The splits of a region of np positions for nb x nb blocks: *per positions each (a multiple of
 * GS_KT): GS_PX where that gives GS_CTAS thread blocks, else fewer, down to GS_PX_MIN, so that small
 * regions and few blocks still fill a GPU; fewer splits where GS_PARTS would be passed; their
 * number (from np and nb alone, never the GPU), or 0 where even one split a block would pass
 * GS_PARTS (the caller sums another way). Host and device. */
__host__ __device__ __forceinline__ unsigned gs_splits(size_t np, int nb, size_t *per)
{
    const size_t blocks = (size_t)nb * (nb + 1) / 2;
    if (nb <= 0 || blocks > GS_PARTS || np == 0) return 0;
    const size_t coarse = (np + GS_PX - 1) / GS_PX, fine = (np + GS_PX_MIN - 1) / GS_PX_MIN, want = (GS_CTAS + blocks - 1) / blocks;
    size_t n = coarse > want ? coarse : want < fine ? want : fine, cap = GS_PARTS / blocks;
    if (n > cap) n = cap;
    size_t p = (np + n - 1) / n;
    p = (p + GS_KT - 1) / GS_KT * GS_KT;
    *per = p;
    return (unsigned)((np + p - 1) / p);
}

/* block b of the upper triangle of nb x nb blocks, numbered row by row: (bi, bj), bi <= bj */
__host__ __device__ __forceinline__ void gs_block(int b, int nb, int *bi, int *bj)
{
    int i = 0;
    while (b >= nb - i) b -= nb - i, i++;
    *bi = i, *bj = i + b;
}
__host__ __device__ __forceinline__ int gs_block_index(int bi, int bj, int nb) { return bi * nb - bi * (bi - 1) / 2 + (bj - bi); }

/* 8 channels c .. c + 7 of pixel px into v, as stored: zeros past C (vec: c a multiple of 8 and f
 * 16-byte aligned, so the 8 are all in or all out: one or two 16-byte loads) */
template <typename T> __device__ __forceinline__ void gs_load8(const T *f, size_t px, int C, int c, bool vec, T *v)
{
    if (vec && c < C) {
#pragma unroll
        for (int l = 0; l < 8; l += 16 / (int)sizeof(T)) copy16(v + l, f + px * C + c + l);
        return;
    }
#pragma unroll
    for (int l = 0; l < 8; l++) {
        if (c + l < C)
            v[l] = f[px * C + c + l];
        else
            st<T>(v, l, 0.f);
    }
}

/* One stage's values in registers, as stored (bf16 and fp16: 4 registers for 8, not 8): for
 * positions k0 and k0 + 16 of the stage (t = threadIdx.x, k0 = t / 8), 8 channels (t % 8) of the
 * row block and of the column block, and the mask's weight; zeros past the split's end. */
template <typename T> struct gs_stage {
    alignas(16) T a[2][8];
    alignas(16) T b[2][8];
    float w[2];
};

template <typename T>
__device__ __forceinline__ void gs_fetch(const T *f, const float *m, int W, int C, nst_rect r, size_t p, size_t end, int ci, int cj,
                                         bool same, bool vec, gs_stage<T> &s)
{
    const int t = (int)threadIdx.x, g = (t % 8) * 8;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const size_t q = p + (size_t)(t / 8 + 16 * h);
        if (q >= end) {
#pragma unroll
            for (int l = 0; l < 8; l++) st<T>(s.a[h], l, 0.f), st<T>(s.b[h], l, 0.f);
            s.w[h] = 0.f;
            continue;
        }
        const size_t px = (size_t)(r.y + (int)(q / (size_t)r.w)) * W + r.x + (int)(q % (size_t)r.w);
        gs_load8<T>(f, px, C, ci + g, vec, s.a[h]);
        if (!same) gs_load8<T>(f, px, C, cj + g, vec, s.b[h]);
        s.w[h] = m ? m[px] : 1.f;
    }
}

/* value 2r + e of v's 8 (r in 0..3), chosen by selects: an index into v would move it from
 * registers to local memory */
__device__ __forceinline__ float gs_pick(const float *v, int r, int e)
{
    return r == 0 ? v[e] : r == 1 ? v[2 + e] : r == 2 ? v[4 + e] : v[6 + e];
}

/* two doubles to 16-byte aligned shared memory, as one store from registers */
__device__ __forceinline__ void gs_st16(double *dst, double v0, double v1)
{
#ifdef __CUDACC__
    *reinterpret_cast<double2 *>(dst) = make_double2(v0, v1);
#else
    alignas(16) const double t[2] = {v0, v1};
    copy16(dst, t); /* the host stand-in: stops the test at a misaligned address, as a GPU would fault */
#endif
}

/* the stage into shared memory: sa[k][i] = m_p f_p[i] (the row side weighted), sb[k][j] = f_p[j]
 * (sb is sa's when the block is diagonal and unweighted, and is not written). 16-byte stores (rows
 * of GS_LD doubles keep them aligned); the 8 threads of a row (t % 8, 64 bytes apart) take their
 * four 16-byte pieces in an order rotated by (t % 8) / 2, so each store of a quarter warp meets
 * every bank once instead of four threads a bank. */
template <typename T> __device__ __forceinline__ void gs_store(const gs_stage<T> &s, bool same, double *sa, double *sb)
{
    const int t = (int)threadIdx.x, g = (t % 8) * 8, rot = (t % 8) / 2;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int k = t / 8 + 16 * h;
        const double w = (double)s.w[h];
        float a[8], b[8];
#pragma unroll
        for (int l = 0; l < 8; l++) a[l] = ld<T>(s.a[h], l), b[l] = same ? a[l] : ld<T>(s.b[h], l);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int r = (j + rot) % 4;
            gs_st16(sa + k * GS_LD + g + 2 * r, w * (double)gs_pick(a, r, 0), w * (double)gs_pick(a, r, 1));
            if (sb != sa) gs_st16(sb + k * GS_LD + g + 2 * r, (double)gs_pick(b, r, 0), (double)gs_pick(b, r, 1));
        }
    }
}

/* whether a warp's 16 x 8 tile (a, b) of quadrant (qr, qc) reaches the upper triangle: every tile of
 * an off-diagonal block; in a diagonal one, none below its diagonal */
__device__ __forceinline__ bool gs_tile_used(bool diag, int qr, int qc, int a, int b) { return !diag || qr < qc || (qr == qc && 2 * a <= b); }

/* Blocks (bi, bj) of the upper triangle over splits of `per` positions: block index blockIdx.x %
 * nblk, split blockIdx.x / nblk; the block's sums over its split into part[blockIdx.x] (GS_BT x
 * GS_BT, row-major; the tiles below a diagonal block's diagonal left unwritten). m: NULL, or a
 * weight per pixel of f. vec: 8-channel loads (C a multiple of 8, f 16-byte aligned). */
template <typename T>
__global__ void __launch_bounds__(GS_THREADS) /* sm_90: 153 registers in bf16 and fp16 (3 blocks an SM), 175 in fp32 */
    k_gram_sums(const T *f, const float *m, int W, int C, nst_rect r, int nb, size_t per, size_t np, double *part, bool vec)
{
    alignas(16) __shared__ double gs_sa[GS_KT * GS_LD], gs_sb[GS_KT * GS_LD];
    const int nblk = nb * (nb + 1) / 2, blk = (int)(blockIdx.x % (unsigned)nblk);
    const size_t split = blockIdx.x / (unsigned)nblk, p0 = split * per, end = p0 + per < np ? p0 + per : np;
    int bi, bj;
    gs_block(blk, nb, &bi, &bj);
    const bool diag = bi == bj; /* (the column block's channels are the row block's) */
    double *sb = diag && !m ? gs_sa : gs_sb;
    const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32, qr = warp / 2, qc = warp % 2;
    /* a diagonal block's quadrant below its diagonal holds nothing of the upper triangle */
    const bool idle = diag && qr > qc; /* (gs_tile_used is false for all its tiles) */
    /* the warp's 32 x 32: two 16-row pairs of tiles (p) by four 8-column tiles (b); lane 4 g + t */
    double acc[2][4][4];
#pragma unroll
    for (int a = 0; a < 2; a++)
#pragma unroll
        for (int b = 0; b < 4; b++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[a][b][e] = 0.0;
    const int g = lane / 4, t = lane % 4;
    gs_stage<T> st;
    gs_fetch<T>(f, m, W, C, r, p0, end, bi * GS_BT, bj * GS_BT, diag, vec, st);
    for (size_t p = p0; p < end; p += GS_KT) {
        __syncthreads(); /* the previous stage read */
        gs_store(st, diag, gs_sa, sb);
        __syncthreads();
        if (p + GS_KT < end) gs_fetch<T>(f, m, W, C, r, p + GS_KT, end, bi * GS_BT, bj * GS_BT, diag, vec, st);
        if (idle) continue;
#pragma unroll
        for (int k = 0; k < GS_KT; k += 8) {
            const int k0 = (k + t) * GS_LD + g, k4 = k0 + 4 * GS_LD;
            double fa[2][4], fb[4][2];
#pragma unroll
            for (int a = 0; a < 2; a++) {
                const int row = qr * 32 + a * 16;
                fa[a][0] = gs_sa[k0 + row], fa[a][1] = gs_sa[k0 + row + 8], fa[a][2] = gs_sa[k4 + row], fa[a][3] = gs_sa[k4 + row + 8];
            }
#pragma unroll
            for (int b = 0; b < 4; b++) fb[b][0] = sb[k0 + qc * 32 + b * 8], fb[b][1] = sb[k4 + qc * 32 + b * 8];
#pragma unroll
            for (int a = 0; a < 2; a++)
#pragma unroll
                for (int b = 0; b < 4; b++)
                    if (gs_tile_used(diag, qr, qc, a, b)) gs_mma(acc[a][b], fa[a], fb[b]);
        }
    }
    if (idle) return;
    double *out = part + (size_t)blockIdx.x * GS_BT * GS_BT;
#pragma unroll
    for (int a = 0; a < 2; a++)
#pragma unroll
        for (int b = 0; b < 4; b++) {
            if (!gs_tile_used(diag, qr, qc, a, b)) continue;
            const int row = qr * 32 + a * 16 + g, col = qc * 32 + b * 8 + 2 * t;
            out[row * GS_BT + col] = acc[a][b][0], out[row * GS_BT + col + 1] = acc[a][b][1];
            out[(row + 8) * GS_BT + col] = acc[a][b][2], out[(row + 8) * GS_BT + col + 1] = acc[a][b][3];
        }
}

/* g[i c + j] += alpha (the partials of entry (i, j) added in split order), for every i <= j < c */
__global__ void k_gram_sums_add(const double *part, int C, int nb, unsigned splits, double alpha, double *g)
{
    const int nblk = nb * (nb + 1) / 2;
    GRID_STRIDE(k, (size_t)C * C)
    {
        const int i = (int)(k / C), j = (int)(k % C);
        if (i > j) continue;
        const size_t at = (size_t)gs_block_index(i / GS_BT, j / GS_BT, nb) * GS_BT * GS_BT + (i % GS_BT) * GS_BT + j % GS_BT;
        double s = 0;
        for (unsigned q = 0; q < splits; q++) s += part[at + (size_t)q * nblk * GS_BT * GS_BT];
        g[k] += alpha * s;
    }
}
