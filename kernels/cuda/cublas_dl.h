/* kernels/cuda/cublas_dl.h: cuBLAS, loaded when the CUDA backend opens (dlopen) instead of linked.
 * Linking cuBLAS costs every process about 210 MiB of resident memory at start (the loader
 * relocates libcublasLt), which CPU-only ranks and the gigapixel I/O memory bound cannot pay. The
 * functions the backend uses are called through this table; the types come from cublas_v2.h. */
#ifndef NST_CUBLAS_DL_H
#define NST_CUBLAS_DL_H

#include <cublas_v2.h>

typedef struct {
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*set_pointer_mode)(cublasHandle_t, cublasPointerMode_t);
    cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
    cublasStatus_t (*set_workspace)(cublasHandle_t, void *, size_t);
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *, const void *,
                              cudaDataType, int, const void *, cudaDataType, int, const void *, void *, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
    cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                                              const void *, cudaDataType, int, long long, const void *, cudaDataType, int, long long,
                                              const void *, void *, cudaDataType, int, long long, int, cublasComputeType_t,
                                              cublasGemmAlgo_t);
    const char *(*status_string)(cublasStatus_t);
    cublasStatus_t (*get_property)(libraryPropertyType, int *);
} nst_cublas_api;

/* The loaded table, or NULL with a reason in why ("libcublas.so.13: cannot open ..."). */
const nst_cublas_api *nst_cublas(char *why, size_t cap);

#endif
