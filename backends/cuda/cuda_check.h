#pragma once
// Every CUDA runtime and cuBLAS call is checked: a failure throws normgrad::Error naming the
// call, the file and line, and the library's own error name and message.
//
//   NG_CUDA_CHECK(cudaMemcpyAsync(...));
//   NG_CUBLAS_CHECK(cublasSgemm(...));
//   NG_CUDA_CHECK_LAUNCH();   // after a kernel launch: a bad configuration shows up here

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace normgrad::backend::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw_cuda_error(status, call, file, line);
}

inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

}  // namespace normgrad::backend::cuda

#define NG_CUDA_CHECK(call) ::normgrad::backend::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define NG_CUBLAS_CHECK(call) \
  ::normgrad::backend::cuda::check_cublas((call), #call, __FILE__, __LINE__)
#define NG_CUDA_CHECK_LAUNCH() NG_CUDA_CHECK(cudaGetLastError())
