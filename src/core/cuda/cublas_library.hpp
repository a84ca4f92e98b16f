#pragma once
// Internal: cuBLAS, opened on first use. libasrdec does not link cuBLAS, so a program that decodes on the CPU, or
// only asks for the version, never maps cuBLAS and cuBLASLt (~600 MB); the first CUDA transducer decoder opens it.

#include <cublas_v2.h>

namespace asrdec::detail {

/** cublasGemmEx, the exported function (the headers add an inline C++ overload taking the compute type as a
 *  cudaDataType, so its type must be spelled out; cublas_library.cpp checks that it names the exported one). */
using CublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                        const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                        const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

/** The cuBLAS entry points asrdec calls. Their types come from the cuBLAS headers asrdec was compiled with, and the
 *  library opened is the one with the same major version, so calls match the ABI they were compiled against. */
struct CublasLibrary {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasDestroy) destroy = nullptr;
  decltype(&cublasSetStream) set_stream = nullptr;
  decltype(&cublasSetWorkspace) set_workspace = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  CublasGemmEx gemm_ex = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

/** Opens cuBLAS once per process and returns its entry points; throws Unsupported naming the library file and the
 *  fix when it cannot be opened or lacks a symbol (and again on every later call). Thread-safe. */
const CublasLibrary& cublas_library();

/** The file name cublas_library() opens first, e.g. "libcublas.so.13". */
const char* cublas_library_name() noexcept;

}  // namespace asrdec::detail
