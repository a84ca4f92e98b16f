#pragma once
// ASRDEC_HD marks the per-element functions that the CPU and CUDA executors share (DESIGN.md §3): they
// compile as __host__ __device__ under nvcc and as plain inline functions under the host compiler.

#if defined(__CUDACC__)
#define ASRDEC_HD __host__ __device__
#define ASRDEC_HD_INLINE __host__ __device__ __forceinline__
#else
#define ASRDEC_HD
#define ASRDEC_HD_INLINE inline
#endif
