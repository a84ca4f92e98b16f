#pragma once
// Internal: refuses a device that the library holds no kernels for, before any work is enqueued, with a message
// that names the fix, instead of a bare "no kernel image" CUDA error at the first launch.

#include "asrdec/core/device.hpp"

namespace asrdec::detail {

/** Throws Unsupported when asrdec was not compiled for `device`'s architecture (neither its machine code nor PTX that
 *  the driver can compile for it); the answer is cached per device. Called by every CUDA executor and the CUDA
 *  n-gram tables when they are created. */
void require_kernel_image(Device device);

}  // namespace asrdec::detail
