#pragma once
// NORMGRAD_HOST_DEVICE marks a function that both backends compile: __host__ __device__ under
// nvcc, nothing for the host compiler. Headers of arithmetic shared by the CPU and CUDA kernels
// (philox.h, adam_scalars.h, implicit_columns.h, fused_row_norm.h) use it.

#if defined(__CUDACC__)
#define NORMGRAD_HOST_DEVICE __host__ __device__
#else
#define NORMGRAD_HOST_DEVICE
#endif
